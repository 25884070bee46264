// Everything of rh_bricks in one include.
#pragma once

#include "rh/bricks/breakdown.hpp"
#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/chrome_trace.hpp"
#include "rh/bricks/clock.hpp"
#include "rh/bricks/event.hpp"
#include "rh/bricks/graph.hpp"
#include "rh/bricks/graph_algorithms.hpp"
#include "rh/bricks/profiler.hpp"
#include "rh/bricks/report.hpp"
#include "rh/bricks/roofline.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/bricks/stats.hpp"
#include "rh/bricks/table.hpp"
