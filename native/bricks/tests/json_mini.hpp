// Test-only: a small JSON parser and a validator for the JSON Schema keywords our schema uses
// (type, required, properties, additionalProperties, items, enum, const, minimum, $ref to $defs).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rh::bricks::testing {

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;

struct Json {
  // null, bool, number, string, array, object
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>,
               std::shared_ptr<JsonObject>>
      v;
  bool is_null() const { return v.index() == 0; }
  bool is_bool() const { return v.index() == 1; }
  bool is_number() const { return v.index() == 2; }
  bool is_string() const { return v.index() == 3; }
  bool is_array() const { return v.index() == 4; }
  bool is_object() const { return v.index() == 5; }
  double num() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  const JsonArray& arr() const { return *std::get<4>(v); }
  const JsonObject& obj() const { return *std::get<5>(v); }
  const Json& operator[](const std::string& k) const { return obj().at(k); }
  bool has(const std::string& k) const { return is_object() && obj().count(k) > 0; }
};

// Throws std::runtime_error with the offset on malformed input.
Json parse_json(std::string_view text);

// Empty when `doc` satisfies `schema`; otherwise one message per violation, with its JSON path.
std::vector<std::string> validate(const Json& doc, const Json& schema);

std::string read_file(const std::string& path);

}  // namespace rh::bricks::testing
