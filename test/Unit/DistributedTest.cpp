//===- DistributedTest.cpp - Symmetric workspace records and validation ---===//

#include "kiln/Runtime/Distributed.h"
#include "kiln/Runtime/Kernel.h"

#include "ErrorOf.h"

#include <gtest/gtest.h>

#include <functional>

using namespace kiln;
using kiln::test::errorOf;

namespace {

WorkspaceRecord recordOf(int rank, int world, uint64_t bytes) {
  WorkspaceRecord r;
  r.rank = rank;
  r.world = world;
  r.bytes = bytes;
  r.deviceUuid.fill(0xab);
  r.pciBusId = "0000:3b:00.0";
  for (size_t i = 0; i < r.ipcHandle.size(); ++i)
    r.ipcHandle[i] = static_cast<uint8_t>(i * 7 + rank);
  return r;
}

std::vector<WorkspaceRecord> recordsOf(int world, uint64_t bytes) {
  std::vector<WorkspaceRecord> out;
  for (int r = 0; r < world; ++r)
    out.push_back(recordOf(r, world, bytes));
  return out;
}

} // namespace

TEST(WorkspaceRecordTest, RoundTrip) {
  WorkspaceRecord in = recordOf(3, 8, (1ull << 40) + 12345);
  std::string bytes = encodeWorkspaceRecord(in);
  ASSERT_EQ(bytes.size(), kWorkspaceRecordSize);
  WorkspaceRecord out = decodeWorkspaceRecord(bytes);
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.world, 8);
  EXPECT_EQ(out.bytes, in.bytes);
  EXPECT_EQ(out.deviceUuid, in.deviceUuid);
  EXPECT_EQ(out.pciBusId, "0000:3b:00.0");
  EXPECT_EQ(out.ipcHandle, in.ipcHandle);
  EXPECT_EQ(encodeWorkspaceRecord(out), bytes);
  // The longest bus id that fits, and one past it.
  in.pciBusId = std::string(31, 'f');
  EXPECT_EQ(decodeWorkspaceRecord(encodeWorkspaceRecord(in)).pciBusId, in.pciBusId);
  in.pciBusId += "f";
  EXPECT_EQ(errorOf([&] { encodeWorkspaceRecord(in); }),
            "kiln: symmetric workspace: PCI bus id '" + in.pciBusId +
                "' does not fit the record (at most 31 characters, no NUL)");
}

TEST(WorkspaceRecordTest, CorruptRecordsNameTheProblem) {
  std::string good = encodeWorkspaceRecord(recordOf(1, 2, 4096));
  std::string badMagic = good;
  badMagic[0] = 'X';
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(badMagic, "rank 1's record"); }),
            "kiln: symmetric workspace: rank 1's record is not a kiln workspace record (bad "
            "magic)");
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord("not a record"); }),
            "kiln: symmetric workspace: the record is not a kiln workspace record (bad magic)");
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(""); }),
            "kiln: symmetric workspace: the record is truncated (0 bytes, expected 140)");
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(good.substr(0, 10)); }),
            "kiln: symmetric workspace: the record is truncated (10 bytes, expected 140)");
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(good.substr(0, 100)); }),
            "kiln: symmetric workspace: the record is truncated (100 bytes, expected 140)");
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(good + "x"); }),
            "kiln: symmetric workspace: the record is too long (141 bytes, expected 140)");
  std::string otherVersion = good;
  otherVersion[8] = 2;
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(otherVersion); }),
            "kiln: symmetric workspace: the record has format version 2; this kiln reads version "
            "1 (every rank must run the same kiln)");
  std::string unterminated = good;
  for (size_t i = 44; i < 76; ++i) // the bus id field
    unterminated[i] = 'a';
  EXPECT_EQ(errorOf([&] { decodeWorkspaceRecord(unterminated); }),
            "kiln: symmetric workspace: the record has an unterminated PCI bus id");
  // decodeWorkspaceRecords names the rank whose record is bad.
  EXPECT_EQ(errorOf([&] {
              decodeWorkspaceRecords({good, good.substr(0, 20)});
            }),
            "kiln: symmetric workspace: rank 1's record is truncated (20 bytes, expected 140)");
}

TEST(WorkspaceRecordTest, ValidRecordsPass) {
  EXPECT_NO_THROW(checkWorkspaceRecords(recordsOf(1, 256), 0, 1));
  EXPECT_NO_THROW(checkWorkspaceRecords(recordsOf(4, 8192), 2, 4));
  EXPECT_NO_THROW(checkWorkspaceRecords(recordsOf(64, 8192), 63, 64));
}

TEST(WorkspaceRecordTest, RankAndWorldOutOfRange) {
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords({}, 0, 0); }),
            "kiln: symmetric workspace: world 0 is out of range [1, 64]");
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(recordsOf(65, 256), 0, 65); }),
            "kiln: symmetric workspace: world 65 is out of range [1, 64]");
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(recordsOf(2, 256), 2, 2); }),
            "kiln: symmetric workspace: rank 2 is out of range [0, 1] for a world of 2");
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(recordsOf(2, 256), -1, 2); }),
            "kiln: symmetric workspace: rank -1 is out of range [0, 1] for a world of 2");
}

TEST(WorkspaceRecordTest, RecordCountAndOrder) {
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(recordsOf(3, 256), 0, 2); }),
            "kiln: symmetric workspace: got 3 records for a world of 2 (one per rank, in rank "
            "order)");
  std::vector<WorkspaceRecord> swapped = recordsOf(3, 256);
  std::swap(swapped[1], swapped[2]);
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(swapped, 0, 3); }),
            "kiln: symmetric workspace: record 1 is rank 2's (the records must be in rank order)");
}

TEST(WorkspaceRecordTest, WorldMismatch) {
  std::vector<WorkspaceRecord> records = recordsOf(2, 256);
  records[1].world = 4;
  EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(records, 0, 2); }),
            "kiln: symmetric workspace: rank 1 has a world of 4, rank 0 has 2 (every rank must "
            "pass the same world)");
}

TEST(WorkspaceRecordTest, SizeMismatchNamesTheRanksAndSizes) {
  std::vector<WorkspaceRecord> records = recordsOf(4, 8192);
  records[2].bytes = 4096;
  const std::string expected = "kiln: symmetric workspace: rank 2 has 4096 bytes, rank 0 has "
                               "8192 (every rank must pass the same size)";
  // Every rank sees the same records and raises the same error.
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(errorOf([&] { checkWorkspaceRecords(records, rank, 4); }), expected);
}

TEST(SymmetricWorkspaceTest, ArgumentsAreCheckedBeforeTheDriver) {
  EXPECT_EQ(errorOf([] { SymmetricWorkspace::allocate(0, 0, 1); }),
            "kiln: symmetric workspace: the size must be positive, got 0 bytes");
  EXPECT_EQ(errorOf([] { SymmetricWorkspace::allocate(256, 1, 1); }),
            "kiln: symmetric workspace: rank 1 is out of range [0, 0] for a world of 1");
  EXPECT_EQ(errorOf([] { SymmetricWorkspace::allocate(256, 0, 65); }),
            "kiln: symmetric workspace: world 65 is out of range [1, 64]");
}

TEST(SymmetricWorkspaceTest, WithoutDriverAllocateFailsCleanly) {
  if (driverAvailable())
    GTEST_SKIP() << "a CUDA driver is present on this machine";
  std::string msg = errorOf([] { SymmetricWorkspace::allocate(4096, 0, 1); });
  EXPECT_NE(msg.find("kiln: cannot load the CUDA driver (libcuda.so.1)"), std::string::npos) << msg;
}

TEST(SymmetricWorkspaceTest, CreateTakesPartInTheExchangeWhenAllocationFails) {
  // Rank 0 of 2 with a size of 0 fails before the driver; it still publishes a
  // failure record, and throws its own error after the exchange.
  std::vector<std::string> published;
  auto exchange = [&](const std::string &record) {
    published.push_back(record);
    return std::vector<std::string>{record, record};
  };
  EXPECT_EQ(errorOf([&] { SymmetricWorkspace::create(0, 0, 2, exchange); }),
            "kiln: symmetric workspace: the size must be positive, got 0 bytes");
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0], std::string(kFailedWorkspaceRecord) +
                              "kiln: symmetric workspace: the size must be positive, got 0 bytes");
}

TEST(SymmetricWorkspaceTest, CreateNamesThePeerThatFailed) {
  if (!driverAvailable())
    GTEST_SKIP() << "no CUDA driver on this machine";
  auto exchange = [](const std::string &record) {
    return std::vector<std::string>{record, std::string(kFailedWorkspaceRecord) + "out of memory"};
  };
  EXPECT_EQ(errorOf([&] { SymmetricWorkspace::create(4096, 0, 2, exchange); }),
            "kiln: symmetric workspace: rank 1 failed to allocate its workspace: out of memory");
  SymmetricWorkspace ws = SymmetricWorkspace::create(
      4096, 0, 1, [](const std::string &record) { return std::vector<std::string>{record}; });
  EXPECT_TRUE(ws.isOpen());
  EXPECT_EQ(ws.peer(0), ws.local());
}

TEST(SymmetricWorkspaceTest, WorldOfOneOnTheGpu) {
  if (!driverAvailable())
    GTEST_SKIP() << "no CUDA driver on this machine";
  SymmetricWorkspace ws = SymmetricWorkspace::allocate(1000, 0, 1);
  EXPECT_EQ(ws.bytes(), 1000u);
  EXPECT_EQ(ws.rank(), 0);
  EXPECT_EQ(ws.world(), 1);
  EXPECT_FALSE(ws.isOpen());
  EXPECT_NE(ws.local(), 0u);
  EXPECT_NE(ws.peerTable(), 0u);
  EXPECT_EQ(ws.local() % 256, 0u);
  EXPECT_EQ(ws.peer(0), ws.local());
  WorkspaceRecord rec = decodeWorkspaceRecord(ws.exchangeRecord());
  EXPECT_EQ(rec.rank, 0);
  EXPECT_EQ(rec.world, 1);
  EXPECT_EQ(rec.bytes, 1000u);
  EXPECT_FALSE(rec.pciBusId.empty());

  // A record that is not ours at our index.
  WorkspaceRecord forged = rec;
  forged.ipcHandle[0] ^= 1;
  EXPECT_EQ(errorOf([&] { ws.open({encodeWorkspaceRecord(forged)}); }),
            "kiln: symmetric workspace: record 0 is not this rank's own (the exchange must "
            "return every rank's record, in rank order)");
  EXPECT_FALSE(ws.isOpen());

  ws.open({ws.exchangeRecord()});
  EXPECT_TRUE(ws.isOpen());
  EXPECT_EQ(ws.peer(0), ws.local());
  EXPECT_EQ(errorOf([&] { ws.open({ws.exchangeRecord()}); }),
            "kiln: symmetric workspace: rank 0's workspace is already open");
  EXPECT_EQ(errorOf([&] { ws.peer(1); }),
            "kiln: symmetric workspace: peer 1 is out of range [0, 0]");
  ws.zero(nullptr);

  const CUdeviceptr local = ws.local();
  SymmetricWorkspace moved = std::move(ws);
  EXPECT_TRUE(moved.isOpen());
  EXPECT_EQ(moved.local(), local);
}
