//===- Distributed.h - Symmetric workspaces over CUDA IPC -------*- C++ -*-===//
//
// A symmetric workspace is a device allocation of the same size on every rank
// of a job (one process a rank; ranks may share one GPU, since CUDA IPC maps
// another process's allocation on the same device), whose peers' allocations
// are mapped into every process. Multi-GPU kernels take its peer table -- a
// device array of `world` uint64 addresses, entry r the base of rank r's
// workspace as mapped in this process -- as a pointer argument and index it by
// rank. The all-zero state is the collectives' "empty" (docs/kernels/
// collectives.md). Peers are reached by unicast CUDA IPC / P2P mappings only;
// NVLink multicast is never used.
//
// Setting one up takes one exchange between the ranks, which kiln does not
// own: each rank calls allocate(), publishes exchangeRecord() (a small binary
// record: rank, world, size, device identity, IPC handle), gathers every
// rank's record in rank order by any transport it has (torch.distributed in
// kiln.distributed; a serving stack its own), and calls open() with them.
// open() validates the records the same way on every rank, so a mistake (a
// rank with another size, say) raises on every rank rather than hanging one.
//
// The record codec and its validation need no GPU (tested on the CPU).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_DISTRIBUTED_H
#define KILN_RUNTIME_DISTRIBUTED_H

#include "kiln/Runtime/Error.h"

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// The most ranks a symmetric workspace spans (the peer table's bound).
inline constexpr int kMaxWorkspaceWorld = 64;

/// What a rank publishes about its workspace.
struct WorkspaceRecord {
  int rank = 0;
  int world = 0;
  /// The size every rank asked for (the allocation is rounded up to 256 bytes).
  uint64_t bytes = 0;
  /// The GPU's UUID (cuDeviceGetUuid): two ranks share a GPU iff these match.
  std::array<uint8_t, 16> deviceUuid{};
  /// The GPU's PCI bus id ("0000:3b:00.0"), for messages; at most 31 characters.
  std::string pciBusId;
  /// The CUipcMemHandle of the workspace.
  std::array<uint8_t, CU_IPC_HANDLE_SIZE> ipcHandle{};
};

/// Bytes of an encoded WorkspaceRecord.
inline constexpr size_t kWorkspaceRecordSize = 140;

/// The record's bytes: a magic and format version, then the fields above in a
/// fixed little-endian layout. Throws kiln::Error if the PCI bus id is too long.
std::string encodeWorkspaceRecord(const WorkspaceRecord &record);
/// The record in `data`; throws kiln::Error naming `who` ("rank 1's record")
/// and the problem if it is truncated, not a workspace record, or of another
/// format version.
WorkspaceRecord decodeWorkspaceRecord(std::string_view data, std::string_view who = "the record");
/// Every rank's record, `records[r]` decoded as "rank r's record".
std::vector<WorkspaceRecord> decodeWorkspaceRecords(const std::vector<std::string> &records);

/// Checks the records that rank `rank` of `world` gathered: `rank` and `world`
/// in range, one record per rank in rank order, the same world and the same
/// size on every rank. Throws kiln::Error naming the ranks and the values that
/// differ (every rank sees the same records, so every rank throws).
void checkWorkspaceRecords(const std::vector<WorkspaceRecord> &records, int rank, int world);

/// The transport of the one exchange: given this rank's record, returns every
/// rank's, in rank order (an all-gather over the serving stack's bootstrap:
/// MPI, a TCP store, torch.distributed).
using WorkspaceExchange = std::function<std::vector<std::string>(const std::string &record)>;

/// What a rank publishes in place of its record when its allocation failed,
/// followed by the error's message (kiln.distributed publishes the same).
inline constexpr std::string_view kFailedWorkspaceRecord = "kiln symmetric workspace: failed\n";

/// This rank's symmetric workspace: its allocation, the device peer table and
/// the peers' mappings, released together (peer handles closed, memory freed)
/// when it is destroyed. Movable, not copyable. Free it only once no peer's
/// kernel uses it any more (a barrier between the ranks first).
class SymmetricWorkspace {
public:
  /// Allocates `bytes` (rounded up to a multiple of 256) zero-filled in the
  /// current context (or the primary context of device 0, made current), and
  /// a peer table of `world` entries. Throws kiln::Error unless
  /// 1 <= world <= kMaxWorkspaceWorld, 0 <= rank < world and bytes > 0 (checked
  /// before the driver is loaded), or on a driver error.
  static SymmetricWorkspace allocate(size_t bytes, int rank, int world);

  /// allocate(), the exchange and open() as one collective call: the bootstrap
  /// of a stack without Python. Every rank takes part in the exchange even when
  /// its allocation failed (it publishes kFailedWorkspaceRecord and the error
  /// instead), so none waits for a rank that failed: every rank throws
  /// kiln::Error, the failed one its own error, the others naming it. An
  /// exception of `exchange` itself propagates.
  static SymmetricWorkspace create(size_t bytes, int rank, int world,
                                   const WorkspaceExchange &exchange);

  SymmetricWorkspace(SymmetricWorkspace &&other) noexcept;
  SymmetricWorkspace &operator=(SymmetricWorkspace &&other) noexcept;
  SymmetricWorkspace(const SymmetricWorkspace &) = delete;
  SymmetricWorkspace &operator=(const SymmetricWorkspace &) = delete;
  ~SymmetricWorkspace();

  /// The record this rank publishes (encodeWorkspaceRecord).
  std::string exchangeRecord() const;

  /// Maps every peer's workspace from the gathered records (`records[r]` rank
  /// r's, ours included) and fills the peer table. Throws kiln::Error if the
  /// records fail checkWorkspaceRecords, if `records[rank()]` is not this
  /// rank's own, if a peer's GPU is neither this one nor one this process sees
  /// with peer access (naming the ranks), if a handle does not open, or if the
  /// workspace is already open. Nothing stays mapped after a failure.
  void open(const std::vector<std::string> &records);

  /// Resets this rank's workspace to zeros on `stream` (no peer may be using it).
  void zero(CUstream stream);

  /// This rank's workspace.
  CUdeviceptr local() const { return local_; }
  /// The device array of `world()` uint64 addresses (zeros before open()).
  CUdeviceptr peerTable() const { return table_; }
  /// Rank `r`'s workspace as mapped in this process; throws kiln::Error if `r`
  /// is out of range, or is another rank's before open().
  CUdeviceptr peer(int r) const;
  /// The size asked for (every rank's).
  size_t bytes() const { return bytes_; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  /// The ordinal of the workspace's GPU.
  int device() const { return static_cast<int>(device_); }
  bool isOpen() const { return open_; }

private:
  SymmetricWorkspace() = default;
  void release() noexcept;

  CUcontext context_ = nullptr;
  CUdevice device_ = 0;
  int rank_ = 0;
  int world_ = 0;
  size_t bytes_ = 0;
  size_t allocated_ = 0;
  CUdeviceptr local_ = 0;
  CUdeviceptr table_ = 0;
  /// Entry r: rank r's workspace as mapped here (0 until opened).
  std::vector<CUdeviceptr> peers_;
  WorkspaceRecord record_;
  bool open_ = false;
};

} // namespace kiln

#endif // KILN_RUNTIME_DISTRIBUTED_H
