#include <gtest/gtest.h>

#include <rh/huber.hpp>

namespace {

TEST(Huber, RhoIsQuadraticInsideAndLinearOutside) {
  EXPECT_DOUBLE_EQ(rh::huber_rho(0.5, 1.0), 0.125);
  EXPECT_DOUBLE_EQ(rh::huber_rho(1.0, 1.0), 0.5);  // |r| <= tau is inside
  EXPECT_DOUBLE_EQ(rh::huber_rho(-3.0, 1.0), 2.5);
}

TEST(Huber, RhoChangeEqualsTheDirectDifferenceOnEveryPiece) {
  const double tau = 1.5;
  const double cases[][2] = {{0.3, 0.2}, {0.3, -1.0}, {3.0, 0.5},  {-3.0, -0.5},
                             {3.0, 6.0}, {0.5, 3.0},  {-2.0, 1.0}, {2.0, -0.1}};
  for (const auto& c : cases) {
    const double r = c[0];
    const double a = c[1];
    EXPECT_NEAR(rh::huber_rho_change(r, a, tau), rh::huber_rho(r - a, tau) - rh::huber_rho(r, tau),
                1e-12)
        << "r = " << r << ", a = " << a;
  }
}

TEST(Huber, RhoChangeKeepsTinyStepsThatTheDirectDifferenceLoses) {
  // On the quadratic piece h(r, a) = a (a/2 - r): exact for a tiny a; the difference of two
  // rho values rounds it away.
  const double r = 0.75;
  const double a = 1e-17;
  EXPECT_EQ(rh::huber_rho(r - a, 1.0) - rh::huber_rho(r, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(rh::huber_rho_change(r, a, 1.0), a * (a / 2 - r));
}

}  // namespace
