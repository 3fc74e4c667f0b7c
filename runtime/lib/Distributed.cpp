//===- Distributed.cpp - Symmetric workspaces over CUDA IPC ---------------===//

#include "kiln/Runtime/Distributed.h"

#include "Driver.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

namespace kiln {

using detail::Driver;

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw Error("symmetric workspace: " + message);
}

void checkRankAndWorld(int rank, int world) {
  if (world < 1 || world > kMaxWorkspaceWorld)
    fail("world " + std::to_string(world) + " is out of range [1, " +
         std::to_string(kMaxWorkspaceWorld) + "]");
  if (rank < 0 || rank >= world)
    fail("rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(world - 1) +
         "] for a world of " + std::to_string(world));
}

//===----------------------------------------------------------------------===//
// Record layout: magic, version (u32), rank (i32), world (i32), bytes (u64),
// device UUID (16), PCI bus id (32, NUL-padded), IPC handle (64).
//===----------------------------------------------------------------------===//

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'S', 'Y', 'M', 'W'};
constexpr uint32_t kRecordVersion = 1;
constexpr size_t kBusIdField = 32;
static_assert(sizeof(kMagic) + 4 + 4 + 4 + 8 + 16 + kBusIdField + CU_IPC_HANDLE_SIZE ==
              kWorkspaceRecordSize);

void putLE(std::string &out, uint64_t value, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t getLE(const char *p, size_t n) {
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return value;
}

/// Makes `context` current on this thread for the scope (pushed and popped),
/// unless it already is. `status` says whether that worked.
struct ContextScope {
  ContextScope(const Driver &d, CUcontext context) : d(d) {
    CUcontext current = nullptr;
    status = d.cuCtxGetCurrent(&current);
    if (status == CUDA_SUCCESS && current != context) {
      status = d.cuCtxPushCurrent(context);
      pushed = status == CUDA_SUCCESS;
    }
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (pushed)
      (void)d.cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

  const Driver &d;
  CUresult status = CUDA_SUCCESS;
  bool pushed = false;
};

std::optional<CUdevice> deviceWithUuid(const Driver &d, const std::array<uint8_t, 16> &uuid) {
  int count = 0;
  d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    CUuuid id;
    d.check(d.cuDeviceGet(&dev, i), "cuDeviceGet");
    d.check(d.cuDeviceGetUuid(&id, dev), "cuDeviceGetUuid");
    if (std::memcmp(id.bytes, uuid.data(), uuid.size()) == 0)
      return dev;
  }
  return std::nullopt;
}

/// Closes the peer mappings in `peers` (all but `rank`'s own) and zeroes them.
void closePeers(const Driver &d, std::vector<CUdeviceptr> &peers, int rank) noexcept {
  for (int r = 0; r < static_cast<int>(peers.size()); ++r)
    if (r != rank && peers[r]) {
      (void)d.cuIpcCloseMemHandle(peers[r]);
      peers[r] = 0;
    }
}

} // namespace

//===----------------------------------------------------------------------===//
// Records
//===----------------------------------------------------------------------===//

std::string encodeWorkspaceRecord(const WorkspaceRecord &record) {
  if (record.pciBusId.size() >= kBusIdField || record.pciBusId.find('\0') != std::string::npos)
    fail("PCI bus id '" + record.pciBusId + "' does not fit the record (at most " +
         std::to_string(kBusIdField - 1) + " characters, no NUL)");
  std::string out(kMagic, sizeof(kMagic));
  out.reserve(kWorkspaceRecordSize);
  putLE(out, kRecordVersion, 4);
  putLE(out, static_cast<uint32_t>(record.rank), 4);
  putLE(out, static_cast<uint32_t>(record.world), 4);
  putLE(out, record.bytes, 8);
  out.append(reinterpret_cast<const char *>(record.deviceUuid.data()), record.deviceUuid.size());
  out += record.pciBusId;
  out.append(kBusIdField - record.pciBusId.size(), '\0');
  out.append(reinterpret_cast<const char *>(record.ipcHandle.data()), record.ipcHandle.size());
  return out;
}

WorkspaceRecord decodeWorkspaceRecord(std::string_view data, std::string_view who) {
  const std::string name(who);
  if (std::memcmp(data.data(), kMagic, std::min(data.size(), sizeof(kMagic))) != 0)
    fail(name + " is not a kiln workspace record (bad magic)");
  if (data.size() < sizeof(kMagic) + 4)
    fail(name + " is truncated (" + std::to_string(data.size()) + " bytes, expected " +
         std::to_string(kWorkspaceRecordSize) + ")");
  const char *p = data.data() + sizeof(kMagic);
  if (uint64_t version = getLE(p, 4); version != kRecordVersion)
    fail(name + " has format version " + std::to_string(version) + "; this kiln reads version " +
         std::to_string(kRecordVersion) + " (every rank must run the same kiln)");
  if (data.size() != kWorkspaceRecordSize)
    fail(name + " is " + (data.size() < kWorkspaceRecordSize ? "truncated" : "too long") + " (" +
         std::to_string(data.size()) + " bytes, expected " + std::to_string(kWorkspaceRecordSize) +
         ")");
  p += 4;
  WorkspaceRecord r;
  r.rank = static_cast<int32_t>(getLE(p, 4));
  r.world = static_cast<int32_t>(getLE(p + 4, 4));
  r.bytes = getLE(p + 8, 8);
  p += 16;
  std::memcpy(r.deviceUuid.data(), p, r.deviceUuid.size());
  p += r.deviceUuid.size();
  const char *busEnd = std::find(p, p + kBusIdField, '\0');
  if (busEnd == p + kBusIdField)
    fail(name + " has an unterminated PCI bus id");
  r.pciBusId.assign(p, busEnd);
  p += kBusIdField;
  std::memcpy(r.ipcHandle.data(), p, r.ipcHandle.size());
  return r;
}

std::vector<WorkspaceRecord> decodeWorkspaceRecords(const std::vector<std::string> &records) {
  std::vector<WorkspaceRecord> out;
  out.reserve(records.size());
  for (size_t r = 0; r < records.size(); ++r)
    out.push_back(decodeWorkspaceRecord(records[r], "rank " + std::to_string(r) + "'s record"));
  return out;
}

void checkWorkspaceRecords(const std::vector<WorkspaceRecord> &records, int rank, int world) {
  checkRankAndWorld(rank, world);
  if (records.size() != static_cast<size_t>(world))
    fail("got " + std::to_string(records.size()) + " records for a world of " +
         std::to_string(world) + " (one per rank, in rank order)");
  for (int r = 0; r < world; ++r)
    if (records[r].rank != r)
      fail("record " + std::to_string(r) + " is rank " + std::to_string(records[r].rank) +
           "'s (the records must be in rank order)");
  for (int r = 0; r < world; ++r)
    if (records[r].world != world)
      fail("rank " + std::to_string(r) + " has a world of " + std::to_string(records[r].world) +
           ", rank " + std::to_string(rank) + " has " + std::to_string(world) +
           " (every rank must pass the same world)");
  for (int r = 1; r < world; ++r)
    if (records[r].bytes != records[0].bytes)
      fail("rank " + std::to_string(r) + " has " + std::to_string(records[r].bytes) +
           " bytes, rank 0 has " + std::to_string(records[0].bytes) +
           " (every rank must pass the same size)");
}

//===----------------------------------------------------------------------===//
// SymmetricWorkspace
//===----------------------------------------------------------------------===//

SymmetricWorkspace SymmetricWorkspace::allocate(size_t bytes, int rank, int world) {
  checkRankAndWorld(rank, world);
  constexpr size_t kAlign = 256;
  if (bytes == 0)
    fail("the size must be positive, got 0 bytes");
  if (bytes > std::numeric_limits<size_t>::max() - (kAlign - 1))
    fail("the size " + std::to_string(bytes) + " bytes is too large");
  const Driver &d = Driver::get();
  SymmetricWorkspace ws; // frees what was allocated if a step below throws
  ws.context_ = d.currentOrPrimaryContext();
  d.check(d.cuCtxGetDevice(&ws.device_), "cuCtxGetDevice");
  ws.rank_ = rank;
  ws.world_ = world;
  ws.bytes_ = bytes;
  ws.allocated_ = (bytes + kAlign - 1) / kAlign * kAlign;
  ws.peers_.assign(world, 0);
  d.check(d.cuMemAlloc(&ws.local_, ws.allocated_), "cuMemAlloc");
  d.check(d.cuMemAlloc(&ws.table_, world * sizeof(CUdeviceptr)), "cuMemAlloc");
  d.check(d.cuMemsetD8Async(ws.local_, 0, ws.allocated_, nullptr), "cuMemsetD8Async");
  d.check(d.cuMemsetD8Async(ws.table_, 0, world * sizeof(CUdeviceptr), nullptr), "cuMemsetD8Async");
  // The zeros must be in place before any peer can map the workspace.
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  ws.peers_[rank] = ws.local_;

  WorkspaceRecord &rec = ws.record_;
  rec.rank = rank;
  rec.world = world;
  rec.bytes = bytes;
  CUuuid uuid;
  d.check(d.cuDeviceGetUuid(&uuid, ws.device_), "cuDeviceGetUuid");
  std::memcpy(rec.deviceUuid.data(), uuid.bytes, rec.deviceUuid.size());
  char busId[kBusIdField] = {0};
  d.check(d.cuDeviceGetPCIBusId(busId, sizeof(busId) - 1, ws.device_), "cuDeviceGetPCIBusId");
  rec.pciBusId = busId;
  CUipcMemHandle handle;
  d.check(d.cuIpcGetMemHandle(&handle, ws.local_), "cuIpcGetMemHandle");
  std::memcpy(rec.ipcHandle.data(), handle.reserved, rec.ipcHandle.size());
  return ws;
}

SymmetricWorkspace SymmetricWorkspace::create(size_t bytes, int rank, int world,
                                              const WorkspaceExchange &exchange) {
  std::optional<SymmetricWorkspace> ws;
  std::exception_ptr error;
  std::string record;
  try {
    ws.emplace(allocate(bytes, rank, world));
    record = ws->exchangeRecord();
  } catch (const std::exception &e) {
    error = std::current_exception();
    record = std::string(kFailedWorkspaceRecord) + e.what();
  }
  std::vector<std::string> records = exchange(record);
  if (error)
    std::rethrow_exception(error);
  for (size_t r = 0; r < records.size(); ++r)
    if (std::string_view(records[r]).substr(0, kFailedWorkspaceRecord.size()) ==
        kFailedWorkspaceRecord)
      fail("rank " + std::to_string(r) + " failed to allocate its workspace: " +
           records[r].substr(kFailedWorkspaceRecord.size()));
  ws->open(records);
  return std::move(*ws);
}

SymmetricWorkspace::SymmetricWorkspace(SymmetricWorkspace &&other) noexcept {
  *this = std::move(other);
}

SymmetricWorkspace &SymmetricWorkspace::operator=(SymmetricWorkspace &&other) noexcept {
  if (this == &other)
    return *this;
  release();
  context_ = std::exchange(other.context_, nullptr);
  device_ = other.device_;
  rank_ = other.rank_;
  world_ = other.world_;
  bytes_ = std::exchange(other.bytes_, 0);
  allocated_ = std::exchange(other.allocated_, 0);
  local_ = std::exchange(other.local_, 0);
  table_ = std::exchange(other.table_, 0);
  peers_ = std::move(other.peers_);
  other.peers_.clear();
  record_ = std::move(other.record_);
  open_ = std::exchange(other.open_, false);
  return *this;
}

SymmetricWorkspace::~SymmetricWorkspace() { release(); }

void SymmetricWorkspace::release() noexcept {
  if (!local_ && !table_)
    return;
  // Best effort: at process exit the context may already be gone.
  if (const Driver *d = Driver::tryGet()) {
    ContextScope scope(*d, context_);
    closePeers(*d, peers_, rank_);
    if (table_)
      (void)d->cuMemFree(table_);
    if (local_)
      (void)d->cuMemFree(local_);
  }
  local_ = table_ = 0;
  peers_.clear();
  open_ = false;
}

std::string SymmetricWorkspace::exchangeRecord() const { return encodeWorkspaceRecord(record_); }

void SymmetricWorkspace::open(const std::vector<std::string> &records) {
  if (open_)
    fail("rank " + std::to_string(rank_) + "'s workspace is already open");
  std::vector<WorkspaceRecord> recs = decodeWorkspaceRecords(records);
  checkWorkspaceRecords(recs, rank_, world_);
  if (records[rank_] != exchangeRecord())
    fail("record " + std::to_string(rank_) + " is not this rank's own (the exchange must " +
         "return every rank's record, in rank order)");

  const Driver &d = Driver::get();
  std::string unreachable;
  for (int r = 0; r < world_; ++r) {
    const WorkspaceRecord &peer = recs[r];
    if (peer.deviceUuid == record_.deviceUuid)
      continue; // the same GPU: CUDA IPC maps it
    std::string why;
    if (std::optional<CUdevice> dev = deviceWithUuid(d, peer.deviceUuid); !dev) {
      why = "not visible in this process";
    } else {
      int canAccess = 0;
      d.check(d.cuDeviceCanAccessPeer(&canAccess, device_, *dev), "cuDeviceCanAccessPeer");
      if (!canAccess)
        why = "no peer access from GPU " + record_.pciBusId;
    }
    if (!why.empty())
      unreachable += std::string(unreachable.empty() ? "" : "; ") + "rank " + std::to_string(r) +
                     " (GPU " + peer.pciBusId + ": " + why + ")";
  }
  if (!unreachable.empty())
    fail("rank " + std::to_string(rank_) + " cannot reach " + unreachable +
         ". A symmetric workspace spans the GPUs of one node with peer access over CUDA IPC; "
         "cross-node collectives go through NCCL");

  ContextScope scope(d, context_);
  d.check(scope.status, "cuCtxPushCurrent");
  try {
    for (int r = 0; r < world_; ++r) {
      if (r == rank_)
        continue;
      CUipcMemHandle handle;
      std::memcpy(handle.reserved, recs[r].ipcHandle.data(), sizeof(handle.reserved));
      if (CUresult res =
              d.cuIpcOpenMemHandle(&peers_[r], handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
          res != CUDA_SUCCESS) {
        peers_[r] = 0;
        d.check(res, ("cuIpcOpenMemHandle of rank " + std::to_string(r) + "'s workspace").c_str());
      }
    }
    d.check(d.cuMemcpyHtoD(table_, peers_.data(), world_ * sizeof(CUdeviceptr)), "cuMemcpyHtoD");
    // The table must be in place before a kernel on any stream reads it.
    d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  } catch (...) {
    closePeers(d, peers_, rank_);
    throw;
  }
  open_ = true;
}

void SymmetricWorkspace::zero(CUstream stream) {
  const Driver &d = Driver::get();
  ContextScope scope(d, context_);
  d.check(scope.status, "cuCtxPushCurrent");
  d.check(d.cuMemsetD8Async(local_, 0, allocated_, stream), "cuMemsetD8Async");
}

CUdeviceptr SymmetricWorkspace::peer(int r) const {
  if (r < 0 || r >= world_)
    fail("peer " + std::to_string(r) + " is out of range [0, " + std::to_string(world_ - 1) + "]");
  if (!open_ && r != rank_)
    fail("peer " + std::to_string(r) + " before open(): only this rank's workspace is mapped");
  return peers_[r];
}

} // namespace kiln
