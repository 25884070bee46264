// A minimal streaming JSON writer for the exports: correct string escaping, no dependency.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rh::bricks::detail {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint32_t v) { return value(static_cast<std::uint64_t>(v)); }
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(double v);  // non-finite values become null: JSON has no NaN
  JsonWriter& value(bool v);
  // Writes `ns` as microseconds with exactly three decimals (ns / 1000, no rounding).
  JsonWriter& micros(std::int64_t ns);
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  std::string take() { return std::move(out_); }

 private:
  void separate();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace rh::bricks::detail
