#include "rh/bricks/chrome_trace.hpp"

#include <algorithm>

#include "json_writer.hpp"

namespace rh::bricks {

namespace {

constexpr int kPid = 1;

std::string_view event_name(const Event& e, const BrickTable& table) {
  if (e.kind == EventKind::kernel) return e.site && e.site->label ? e.site->label : "kernel";
  return e.brick < table.size() ? std::string_view(table[e.brick].name) : "unknown";
}

std::string_view event_category(const Event& e, const BrickTable& table) {
  if (e.kind != EventKind::brick) return to_string(e.kind);
  return e.brick < table.size() ? to_string(table[e.brick].category) : "unknown";
}

}  // namespace

std::string to_chrome_trace(const std::vector<Event>& events, const BrickTable& table,
                            const std::vector<std::pair<std::uint32_t, std::string>>& thread_names,
                            std::string_view process_name) {
  std::vector<Event> sorted = events;
  // Parents before children at equal starts, so viewers build the same stacks we recorded.
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.duration_ns != b.duration_ns) return a.duration_ns > b.duration_ns;
    return a.depth < b.depth;
  });

  detail::JsonWriter w;
  w.begin_object();
  w.field("displayTimeUnit", "ns");
  w.key("traceEvents").begin_array();

  w.begin_object();
  w.field("name", "process_name").field("ph", "M").field("pid", kPid).field("tid", 0);
  w.key("args").begin_object().field("name", process_name).end_object();
  w.end_object();
  for (const auto& [tid, name] : thread_names) {
    w.begin_object();
    w.field("name", "thread_name").field("ph", "M").field("pid", kPid).field("tid", tid);
    w.key("args").begin_object().field("name", name).end_object();
    w.end_object();
  }

  for (const Event& e : sorted) {
    w.begin_object();
    w.field("name", event_name(e, table)).field("cat", event_category(e, table)).field("ph", "X");
    w.key("ts").micros(e.start_ns);
    w.key("dur").micros(e.duration_ns);
    w.field("pid", kPid).field("tid", e.thread);
    w.key("args").begin_object();
    if (e.batch != kNoBatch) w.field("batch", e.batch).field("iteration", e.iteration);
    w.field("depth", static_cast<std::uint32_t>(e.depth));
    if (e.kind != EventKind::kernel) {
      w.field("elements", e.elements).field("bytes", e.bytes).field("flops", e.flops);
    }
    if (e.kind == EventKind::transfer) w.field("direction", to_string(e.direction));
    if (e.site) {
      w.field("file", e.site->location.file_name())
          .field("line", static_cast<std::uint32_t>(e.site->location.line()))
          .field("function", e.site->location.function_name());
    }
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace rh::bricks
