#include "rh/bricks/brick_table.hpp"

#include <array>
#include <stdexcept>

namespace rh::bricks {

namespace {
constexpr std::array<std::string_view, kCategoryCount> kCategoryNames = {
    "data", "elementwise", "blas2", "blas3", "factor"};
}

std::string_view to_string(Category c) noexcept { return kCategoryNames[static_cast<std::size_t>(c)]; }

Category category_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    if (kCategoryNames[i] == name) return static_cast<Category>(i);
  }
  throw std::invalid_argument("unknown brick category '" + std::string(name) +
                              "'; expected one of data, elementwise, blas2, blas3, factor");
}

BrickTable::BrickTable(std::initializer_list<BrickInfo> known, std::size_t capacity)
    : BrickTable(std::vector<BrickInfo>(known), capacity) {}

BrickTable::BrickTable(std::vector<BrickInfo> known, std::size_t capacity)
    : known_count_(known.size()), capacity_(capacity) {
  if (known.size() > capacity) {
    throw std::invalid_argument("brick table has " + std::to_string(known.size()) +
                                " known bricks, but the capacity is " + std::to_string(capacity));
  }
  // kNoBrick (0xffff) marks kernel events, so ids stop below it.
  if (capacity >= 0xffff) throw std::invalid_argument("brick capacity must be below 65535");
  // Reserved once: interning never reallocates, so a reference into the table stays valid.
  bricks_.reserve(capacity);
  for (std::size_t i = 0; i < known.size(); ++i) {
    if (known[i].id != i) {
      throw std::invalid_argument("brick '" + known[i].name + "' has id " +
                                  std::to_string(known[i].id) + ", but known bricks must be listed "
                                  "with ids 0, 1, 2, ... and it is at position " + std::to_string(i));
    }
    if (find(known[i].name)) {
      throw std::invalid_argument("brick name '" + known[i].name + "' is listed twice");
    }
    bricks_.push_back(std::move(known[i]));
  }
}

std::optional<BrickId> BrickTable::find(std::string_view name) const noexcept {
  for (const BrickInfo& b : bricks_) {
    if (b.name == name) return b.id;
  }
  return std::nullopt;
}

BrickId BrickTable::intern(std::string_view name, Category category) {
  if (auto id = find(name)) return *id;
  if (bricks_.size() == capacity_) {
    throw std::length_error("cannot add brick '" + std::string(name) + "': the profiler holds " +
                            std::to_string(capacity_) + " bricks (the table's capacity)");
  }
  const auto id = static_cast<BrickId>(bricks_.size());
  bricks_.push_back(BrickInfo{id, std::string(name), category});
  return id;
}

}  // namespace rh::bricks
