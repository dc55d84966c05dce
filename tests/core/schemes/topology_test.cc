#include "core/schemes/topology.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

TEST(Topology, ValidTopologiesPass) {
  EXPECT_EQ(validate(Topology::for_cpus(1)), "");
  EXPECT_EQ(validate(Topology::for_cpus(65536)), "");
  Topology t = Topology::for_cpus(384);
  t.hpcc_shape = {8, 8, 8};
  EXPECT_EQ(validate(t), "");
}

TEST(Topology, RejectsZeroAndTooManyCpus) {
  EXPECT_NE(validate(Topology::for_cpus(0)).find("cpus"), std::string::npos);
  EXPECT_NE(validate(Topology::for_cpus(65537)).find("cpus"),
            std::string::npos);
}

TEST(Topology, RejectsAShapeTooSmallForTheCpus) {
  Topology t = Topology::for_cpus(384);
  t.hpcc_shape = {8, 8};
  EXPECT_NE(validate(t).find("below the CPU count 384"), std::string::npos);
}

TEST(Topology, RejectsNonPositiveBatchAndUnitFanOut) {
  Topology t = Topology::for_cpus(4);
  t.hpcc_batch = -1;
  EXPECT_NE(validate(t).find("batch"), std::string::npos);
  t.hpcc_batch = 32;
  t.hpcc_shape = {1, 4};
  EXPECT_NE(validate(t).find("at least 2"), std::string::npos);
}

}  // namespace
}  // namespace rssaudit
