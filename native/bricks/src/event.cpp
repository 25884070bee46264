#include "rh/bricks/event.hpp"

#include <array>

namespace rh::bricks {

std::string_view to_string(EventKind k) noexcept {
  constexpr std::array<std::string_view, 3> names = {"brick", "kernel", "transfer"};
  return names[static_cast<std::size_t>(k)];
}

std::string_view to_string(Direction d) noexcept {
  constexpr std::array<std::string_view, 4> names = {"none", "h2d", "d2h", "d2d"};
  return names[static_cast<std::size_t>(d)];
}

}  // namespace rh::bricks
