#include "json_mini.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rh::bricks::testing {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  Json document() {
    Json j = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON parse error at offset " + std::to_string(i_) + ": " + what);
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  Json value() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    const char c = s_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{string()};
    if (literal("true")) return Json{true};
    if (literal("false")) return Json{false};
    if (literal("null")) return Json{nullptr};
    return number();
  }
  Json object() {
    expect('{');
    auto o = std::make_shared<JsonObject>();
    if (eat('}')) return Json{o};
    do {
      ws();
      std::string k = string();
      expect(':');
      if (!o->emplace(k, value()).second) fail("duplicate key '" + k + "'");
    } while (eat(','));
    expect('}');
    return Json{o};
  }
  Json array() {
    expect('[');
    auto a = std::make_shared<JsonArray>();
    if (eat(']')) return Json{a};
    do a->push_back(value());
    while (eat(','));
    expect(']');
    return Json{a};
  }
  std::string string() {
    if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in string");
      if (c == '\\') {
        if (i_ >= s_.size()) fail("bad escape");
        const char e = s_[i_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {
            if (i_ + 4 > s_.size()) fail("bad \\u escape");
            out += static_cast<char>(std::strtol(std::string(s_.substr(i_, 4)).c_str(), nullptr, 16));
            i_ += 4;
            break;
          }
          case '"': case '\\': case '/': out += e; break;
          default: fail("bad escape");
        }
      } else {
        out += c;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Json number() {
    const std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
    }
    if (start == i_) fail("unexpected character");
    const std::string text(s_.substr(start, i_ - start));
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) fail("bad number '" + text + "'");
    return Json{d};
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

bool has_type(const Json& j, const std::string& t) {
  if (t == "object") return j.is_object();
  if (t == "array") return j.is_array();
  if (t == "string") return j.is_string();
  if (t == "boolean") return j.is_bool();
  if (t == "null") return j.is_null();
  if (t == "number") return j.is_number();
  if (t == "integer") return j.is_number() && std::floor(j.num()) == j.num();
  throw std::runtime_error("schema uses unsupported type '" + t + "'");
}

bool equal(const Json& a, const Json& b) {
  if (a.v.index() != b.v.index()) return false;
  if (a.is_number()) return a.num() == b.num();
  if (a.is_string()) return a.str() == b.str();
  if (a.is_bool()) return std::get<bool>(a.v) == std::get<bool>(b.v);
  return a.is_null();
}

void check(const Json& doc, const Json& schema, const Json& root, const std::string& path,
           std::vector<std::string>& errors) {
  static const std::vector<std::string> known = {
      "$schema", "$id", "$defs", "$ref", "title", "description", "type", "required", "properties",
      "additionalProperties", "items", "enum", "const", "minimum", "minItems", "maxItems"};
  for (const auto& [k, _] : schema.obj()) {
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      throw std::runtime_error("schema keyword '" + k + "' is not supported by the test validator");
    }
  }
  if (schema.has("$ref")) {
    const std::string& ref = schema["$ref"].str();
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
    check(doc, root["$defs"][ref.substr(prefix.size())], root, path, errors);
  }
  if (schema.has("type")) {
    const Json& t = schema["type"];
    bool ok = false;
    if (t.is_string()) ok = has_type(doc, t.str());
    else for (const Json& one : t.arr()) ok = ok || has_type(doc, one.str());
    if (!ok) {
      errors.push_back(path + ": wrong type");
      return;
    }
  }
  if (schema.has("const") && !equal(doc, schema["const"])) errors.push_back(path + ": const mismatch");
  if (schema.has("enum")) {
    bool ok = false;
    for (const Json& e : schema["enum"].arr()) ok = ok || equal(doc, e);
    if (!ok) errors.push_back(path + ": not in enum");
  }
  if (schema.has("minimum") && doc.is_number() && doc.num() < schema["minimum"].num()) {
    errors.push_back(path + ": below minimum");
  }
  if (doc.is_array()) {
    if (schema.has("minItems") && doc.arr().size() < schema["minItems"].num()) errors.push_back(path + ": too few items");
    if (schema.has("maxItems") && doc.arr().size() > schema["maxItems"].num()) errors.push_back(path + ": too many items");
    if (schema.has("items")) {
      for (std::size_t i = 0; i < doc.arr().size(); ++i) {
        check(doc.arr()[i], schema["items"], root, path + "[" + std::to_string(i) + "]", errors);
      }
    }
  }
  if (doc.is_object()) {
    if (schema.has("required")) {
      for (const Json& r : schema["required"].arr()) {
        if (!doc.has(r.str())) errors.push_back(path + ": missing '" + r.str() + "'");
      }
    }
    for (const auto& [k, v] : doc.obj()) {
      if (schema.has("properties") && schema["properties"].has(k)) {
        check(v, schema["properties"][k], root, path + "." + k, errors);
      } else if (schema.has("additionalProperties")) {
        const Json& ap = schema["additionalProperties"];
        if (ap.is_bool() && !std::get<bool>(ap.v)) errors.push_back(path + ": unexpected '" + k + "'");
        else if (ap.is_object()) check(v, ap, root, path + "." + k, errors);
      }
    }
  }
}

}  // namespace

Json parse_json(std::string_view text) { return Parser(text).document(); }

std::vector<std::string> validate(const Json& doc, const Json& schema) {
  std::vector<std::string> errors;
  check(doc, schema, schema, "$", errors);
  return errors;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace rh::bricks::testing
