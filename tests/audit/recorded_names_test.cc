#include "audit/recorded_names.h"

#include <gtest/gtest.h>

#include <vector>

namespace rssaudit {
namespace {

rss_event event(uint8_t kind, uint64_t mm, uint32_t tgid, uint8_t flags = 0) {
  rss_event e{};
  e.kind = kind;
  e.mm = mm;
  e.tgid = tgid;
  e.tid = tgid;
  e.flags = flags;
  return e;
}

using Pairs = std::vector<std::pair<uint64_t, uint32_t>>;

TEST(MmsToName, NamesEachMmOnceAtItsFirstOwnerUpdateOrExec) {
  MmsToName n;
  n.see(event(RSS_EV_UPDATE, 0xa, 10));  // another task's: not its owner
  n.see(event(RSS_EV_UPDATE, 0xa, 11, RSS_EVF_OWNER));
  n.see(event(RSS_EV_UPDATE, 0xa, 11, RSS_EVF_OWNER));
  n.see(event(RSS_EV_EXEC, 0xb, 12));
  n.see(event(RSS_EV_UPDATE, 0xb, 12, RSS_EVF_OWNER));
  EXPECT_EQ(n.take(), (Pairs{{0xa, 11}, {0xb, 12}}));
  EXPECT_TRUE(n.take().empty());
  // Its address freed and taken by another process's mm: a new name.
  n.see(event(RSS_EV_EXIT_MMAP, 0xa, 11));
  n.see(event(RSS_EV_UPDATE, 0xa, 13, RSS_EVF_OWNER));
  EXPECT_EQ(n.take(), (Pairs{{0xa, 13}}));
}

TEST(MmsToName, AnExecBeforeTheNameIsReadLeavesTheOldMmUnnamed) {
  MmsToName n;
  n.see(event(RSS_EV_UPDATE, 0xa, 20, RSS_EVF_OWNER));  // the forked copy
  n.see(event(RSS_EV_UPDATE, 0xc, 21, RSS_EVF_OWNER));  // someone else
  // Loading the new program faults in its mm before the exec's record.
  n.see(event(RSS_EV_UPDATE, 0xb, 20, RSS_EVF_OWNER | RSS_EVF_CREATING));
  n.see(event(RSS_EV_EXEC, 0xb, 20));
  EXPECT_EQ(n.take(), (Pairs{{0xc, 21}, {0xb, 20}}));
}

// A name read just before the process's exec record arrives may be the
// new program's (the comm changes first): held, and dropped by the exec.
TEST(MmsToName, ANameIsHeldAndAnExecWithinTheHoldDropsIt) {
  MmsToName n;
  n.see(event(RSS_EV_UPDATE, 0xa, 30, RSS_EVF_OWNER));
  n.see(event(RSS_EV_UPDATE, 0xc, 31, RSS_EVF_OWNER));
  EXPECT_EQ(n.take(), (Pairs{{0xa, 30}, {0xc, 31}}));
  n.hold({.mm = 0xa, .tgid = 30, .comm = "python3"}, 1000);  // read late
  n.hold({.mm = 0xc, .tgid = 31, .comm = "worker"}, 1000);
  EXPECT_TRUE(n.ready(1000 + MmsToName::kHoldNs - 1).empty());
  n.see(event(RSS_EV_EXEC, 0xb, 30));  // its record, after the read
  const auto ready = n.ready(1000 + MmsToName::kHoldNs);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].comm, "worker");
  EXPECT_EQ(n.take(), (Pairs{{0xb, 30}}));
}

MmSummary mm(uint64_t addr, uint64_t generation, uint32_t tgid) {
  MmSummary s;
  s.key = MmKey{addr, generation};
  s.tgid = tgid;
  return s;
}

TEST(RecordedNames, EachMmTakesTheNameOfItsOwnLife) {
  RecordedNames names;
  names.add({.mm = 0xa, .tgid = 1, .comm = "bash"});
  names.add({.mm = 0xb, .tgid = 1, .comm = "python3"});
  names.add({.mm = 0xa, .tgid = 2, .comm = "cc1plus"});  // address reused
  names.add({.mm = 0xa, .tgid = 1, .comm = "sh"});       // and again, pid too
  // Summaries in any order (ranked), the first life of (1, 0xa) among them.
  const std::vector<MmSummary> mms = {mm(0xa, 9, 1), mm(0xb, 2, 1),
                                      mm(0xa, 1, 1), mm(0xa, 5, 2),
                                      mm(0xd, 7, 3)};
  const auto got = names.names_of(mms);
  ASSERT_EQ(got.size(), mms.size());
  EXPECT_EQ(got[0], "sh");
  EXPECT_EQ(got[1], "python3");
  EXPECT_EQ(got[2], "bash");
  EXPECT_EQ(got[3], "cc1plus");
  EXPECT_EQ(got[4], std::nullopt);  // never named
}

TEST(RecordedNames, WhenOldLivesWereLeftOutTheNewestStillMatch) {
  RecordedNames names;
  names.add({.mm = 0xa, .tgid = 1, .comm = "first"});
  names.add({.mm = 0xa, .tgid = 1, .comm = "second"});
  names.add({.mm = 0xa, .tgid = 1, .comm = "third"});
  const auto got = names.names_of({mm(0xa, 8, 1), mm(0xa, 4, 1)});
  EXPECT_EQ(got[0], "third");
  EXPECT_EQ(got[1], "second");
}

}  // namespace
}  // namespace rssaudit
