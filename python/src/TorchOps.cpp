//===- TorchOps.cpp - kiln/_torch_ops.so: torch operators replaying plans -===//
//
// The CUDA kernel, in C++, of the torch operators kiln.torch_library defines.
// A call computes its launch key from the dispatcher's stack: the current
// device and, per argument, a tensor's dtype, sizes, strides, device and
// 16-byte alignment or any other argument's value. Where a launch plan is
// installed for the key, the call allocates the plan's outputs and scratch
// memory and launches its kernels through the kiln runtime's C API (kiln.h)
// on the current stream: no Python runs. Otherwise the call goes to the op's
// recording twin (`<namespace>_record::<name>`, whose CUDA kernel is the
// Python recorder): it runs the wrapper, makes the plan and installs it (or
// the verdict that the key has none) under the key this call computed.
//
// The library uses no Python API, so one build serves every CPython; Python
// drives it through the C functions at the end (ctypes). It needs the torch it
// was built against (kiln_torch_version) and kiln._runtime, whose C API
// functions and kernel handles it is handed.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"

#include <ATen/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/headeronly/version.h>
#include <torch/library.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// The runtime's C API, as kiln._runtime hands it over
//===----------------------------------------------------------------------===//

struct RuntimeApi {
  kiln_status (*launch)(const kiln_kernel *, void *, const unsigned[3], const kiln_arg *,
                        size_t) = nullptr;
  void (*release)(kiln_kernel *) = nullptr;
  const char *(*lastError)() = nullptr;
};
RuntimeApi api;

//===----------------------------------------------------------------------===//
// Launch keys
//===----------------------------------------------------------------------===//

using Key = std::vector<int64_t>;

struct KeyHash {
  size_t operator()(const Key &key) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : key)
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

enum Tag : int64_t {
  kNone,
  kTensor,
  kInt,
  kDouble,
  kBool,
  kString,
  kIntList,
  kDoubleList,
  kBoolList,
  kDevice
};

int64_t bitsOf(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

/// Appends a list argument: its tag, its length and each element as 64 bits.
template <typename List, typename Bits>
void appendList(Key &key, Tag tag, const List &list, Bits bits) {
  key.push_back(tag);
  key.push_back(static_cast<int64_t>(list.size()));
  for (auto v : list)
    key.push_back(bits(v));
}

/// Appends what the wrapper's decisions depend on for `args`; false where the
/// call has no key (a tensor not on a CUDA device, an argument kind the key
/// does not cover): then the wrapper runs in full.
bool appendKey(const c10::IValue *args, size_t numArgs, Key &key) {
  key.push_back(c10::cuda::current_device());
  for (size_t i = 0; i < numArgs; ++i) {
    const c10::IValue &a = args[i];
    if (a.isTensor()) {
      const at::Tensor &t = a.toTensor();
      if (!t.defined()) {
        key.push_back(kNone);
        continue;
      }
      if (!t.is_cuda())
        return false;
      key.push_back(kTensor);
      key.push_back(static_cast<int64_t>(t.scalar_type()));
      key.push_back(t.dim());
      key.insert(key.end(), t.sizes().begin(), t.sizes().end());
      key.insert(key.end(), t.strides().begin(), t.strides().end());
      key.push_back(t.get_device());
      key.push_back(reinterpret_cast<uintptr_t>(t.const_data_ptr()) & 15);
    } else if (a.isNone()) {
      key.push_back(kNone);
    } else if (a.isBool()) {
      key.push_back(kBool);
      key.push_back(a.toBool());
    } else if (a.isInt()) {
      key.push_back(kInt);
      key.push_back(a.toInt());
    } else if (a.isDouble()) {
      key.push_back(kDouble);
      key.push_back(bitsOf(a.toDouble()));
    } else if (a.isString()) {
      const std::string &s = a.toStringRef();
      key.push_back(kString);
      key.push_back(static_cast<int64_t>(s.size()));
      for (size_t j = 0; j < s.size(); j += 8) {
        int64_t chunk = 0;
        std::memcpy(&chunk, s.data() + j, std::min<size_t>(8, s.size() - j));
        key.push_back(chunk);
      }
    } else if (a.isIntList()) {
      appendList(key, kIntList, a.toIntList(), [](int64_t v) { return v; });
    } else if (a.isDoubleList()) {
      appendList(key, kDoubleList, a.toDoubleList(), bitsOf);
    } else if (a.isBoolList()) {
      appendList(key, kBoolList, a.toBoolList(), [](bool v) { return int64_t(v); });
    } else if (a.isDevice()) {
      key.push_back(kDevice);
      key.push_back(static_cast<int64_t>(a.toDevice().type()));
      key.push_back(a.toDevice().index());
    } else {
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

enum class Memory : uint8_t { Argument, Output, Scratch };

/// Pointer argument `arg` of a launch: the address of tensor `index` of
/// `memory` plus `offset` bytes.
struct PointerSlot {
  uint32_t arg;
  Memory memory;
  uint32_t index;
  int64_t offset;
};

struct PlannedLaunch {
  kiln_kernel *kernel;
  unsigned grid[3];
  std::vector<kiln_arg> args;
  std::vector<PointerSlot> pointers;
};

struct PlannedOutput {
  std::vector<int64_t> sizes, strides;
  at::ScalarType dtype;
};

struct Plan {
  /// False: the key has no plan (the wrapper runs in full every call).
  bool replayable = false;
  c10::DeviceIndex device = 0;
  std::vector<PlannedOutput> outputs;
  std::vector<int64_t> scratch;
  std::vector<PlannedLaunch> launches;
};

constexpr size_t kMaxArgs = 64;

at::ScalarType scalarType(const std::string &name) {
  static const std::map<std::string, at::ScalarType> types = {
      {"bool", at::kBool},
      {"uint8", at::kByte},
      {"int8", at::kChar},
      {"int16", at::kShort},
      {"int32", at::kInt},
      {"int64", at::kLong},
      {"uint16", at::kUInt16},
      {"uint32", at::kUInt32},
      {"uint64", at::kUInt64},
      {"float16", at::kHalf},
      {"bfloat16", at::kBFloat16},
      {"float32", at::kFloat},
      {"float64", at::kDouble},
      {"float8_e4m3fn", at::kFloat8_e4m3fn},
      {"float8_e5m2", at::kFloat8_e5m2},
      {"float8_e8m0fnu", at::kFloat8_e8m0fnu},
      {"float4_e2m1fn_x2", at::kFloat4_e2m1fn_x2},
  };
  auto it = types.find(name);
  if (it == types.end())
    throw std::runtime_error("a plan output has dtype '" + name + "', unknown here");
  return it->second;
}

/// The plan Python installs, from its JSON form (see torch_library._native_plan).
std::unique_ptr<Plan> parsePlan(const json &j, size_t numArgs, size_t numReturns) {
  auto plan = std::make_unique<Plan>();
  if (j.is_null())
    return plan;
  plan->device = j.at("device").get<c10::DeviceIndex>();
  for (const json &o : j.at("outputs"))
    plan->outputs.push_back({o.at("sizes").get<std::vector<int64_t>>(),
                             o.at("strides").get<std::vector<int64_t>>(),
                             scalarType(o.at("dtype").get<std::string>())});
  if (plan->outputs.size() != numReturns)
    throw std::runtime_error("the plan has " + std::to_string(plan->outputs.size()) +
                             " outputs and the op returns " + std::to_string(numReturns));
  plan->scratch = j.at("scratch").get<std::vector<int64_t>>();
  for (const json &l : j.at("launches")) {
    PlannedLaunch launch;
    launch.kernel = reinterpret_cast<kiln_kernel *>(l.at("kernel").get<uintptr_t>());
    auto grid = l.at("grid").get<std::vector<unsigned>>();
    if (grid.size() != 3)
      throw std::runtime_error("a planned grid has " + std::to_string(grid.size()) + " dims");
    std::copy(grid.begin(), grid.end(), launch.grid);
    for (const json &a : l.at("args"))
      launch.args.push_back(
          kiln_arg{a.at(0).get<uint8_t>(), a.at(1).get<uint8_t>(), a.at(2).get<uint64_t>()});
    if (launch.args.size() > kMaxArgs)
      throw std::runtime_error("a planned launch has more than 64 arguments");
    for (const json &p : l.at("pointers")) {
      PointerSlot slot{p.at(0).get<uint32_t>(), static_cast<Memory>(p.at(1).get<uint8_t>()),
                       p.at(2).get<uint32_t>(), p.at(3).get<int64_t>()};
      const size_t limit = slot.memory == Memory::Argument ? numArgs
                           : slot.memory == Memory::Output ? plan->outputs.size()
                                                           : plan->scratch.size();
      if (slot.arg >= launch.args.size() || slot.index >= limit ||
          static_cast<uint8_t>(slot.memory) > 2)
        throw std::runtime_error("a planned pointer refers to nothing");
      launch.pointers.push_back(slot);
    }
    plan->launches.push_back(std::move(launch));
  }
  plan->replayable = true;
  return plan;
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

class PlannedOp;

/// The key a call of this thread computed and handed to the recorder.
struct Pending {
  PlannedOp *op = nullptr;
  Key key;
};
thread_local Pending *pending = nullptr;

class PlannedOp final : public c10::OperatorKernel {
public:
  PlannedOp(std::string name, c10::OperatorHandle recorder, size_t numArgs, size_t numReturns)
      : name_(std::move(name)), recorder_(recorder), numArgs_(numArgs), numReturns_(numReturns) {}

  void operator()(const c10::OperatorHandle &, c10::DispatchKeySet, torch::jit::Stack *stack) {
    thread_local Key key;
    key.clear();
    const c10::IValue *args = stack->data() + stack->size() - numArgs_;
    if (!appendKey(args, numArgs_, key))
      return runWrapper(stack);
    const Plan *plan = find(key);
    if (plan == nullptr)
      return record(std::move(key), stack);
    if (!plan->replayable)
      return runWrapper(stack);
    replay(*plan, stack);
  }

  const std::string &name() const { return name_; }

  void install(Key key, std::unique_ptr<Plan> plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    plans_.emplace(std::move(key), std::move(plan));
  }

  /// How many keys have a plan to replay (the others run the wrapper).
  size_t numPlans() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const auto &entry : plans_)
      n += entry.second->replayable;
    return n;
  }

  size_t numArgs() const { return numArgs_; }
  size_t numReturns() const { return numReturns_; }

private:
  const Plan *find(const Key &key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : it->second.get();
  }

  void runWrapper(torch::jit::Stack *stack) {
    Pending *outer = pending;
    pending = nullptr;
    struct Restore {
      Pending *outer;
      ~Restore() { pending = outer; }
    } restore{outer};
    recorder_.callBoxedForDispatchKey(c10::DispatchKey::CUDA, *stack);
  }

  void record(Key key, torch::jit::Stack *stack) {
    Pending mine{this, std::move(key)};
    Pending *outer = pending;
    pending = &mine;
    struct Restore {
      Pending *outer;
      ~Restore() { pending = outer; }
    } restore{outer};
    recorder_.callBoxedForDispatchKey(c10::DispatchKey::CUDA, *stack);
  }

  void replay(const Plan &plan, torch::jit::Stack *stack) const {
    const c10::IValue *args = stack->data() + stack->size() - numArgs_;
    // Straight to the CUDA allocator (an at::empty_strided would go through the dispatcher);
    // scratch memory is a bare block of the caching allocator, freed (stream-ordered) on return.
    const c10::Device device(at::kCUDA, plan.device);
    c10::SmallVector<at::Tensor, 4> outputs;
    for (const PlannedOutput &o : plan.outputs)
      outputs.emplace_back(at::detail::empty_strided_cuda(o.sizes, o.strides, o.dtype, device));
    c10::SmallVector<c10::DataPtr, 2> scratch;
    if (!plan.scratch.empty()) {
      c10::DeviceGuard guard(device);
      for (int64_t nbytes : plan.scratch)
        scratch.push_back(c10::cuda::CUDACachingAllocator::get()->allocate(nbytes));
    }
    void *stream = c10::cuda::getCurrentCUDAStream(plan.device).stream();
    kiln_arg buffer[kMaxArgs];
    for (const PlannedLaunch &launch : plan.launches) {
      std::copy(launch.args.begin(), launch.args.end(), buffer);
      for (const PointerSlot &p : launch.pointers) {
        const void *base = p.memory == Memory::Argument ? args[p.index].toTensor().const_data_ptr()
                           : p.memory == Memory::Output ? outputs[p.index].const_data_ptr()
                                                        : scratch[p.index].get();
        buffer[p.arg].bits = reinterpret_cast<uintptr_t>(base) + p.offset;
      }
      if (api.launch(launch.kernel, stream, launch.grid, buffer, launch.args.size()) != KILN_OK)
        TORCH_CHECK(false, "kiln op ", name_, ": ", api.lastError());
    }
    torch::jit::drop(*stack, numArgs_);
    for (at::Tensor &o : outputs)
      stack->emplace_back(std::move(o));
  }

  std::string name_;
  c10::OperatorHandle recorder_;
  size_t numArgs_, numReturns_;
  std::mutex mutex_;
  std::unordered_map<Key, std::unique_ptr<Plan>, KeyHash> plans_;
};

thread_local std::string lastError;

template <typename F>
int guarded(F &&f) {
  try {
    lastError.clear();
    return f();
  } catch (const std::exception &e) {
    lastError = e.what();
  } catch (...) {
    lastError = "unknown error";
  }
  return -1;
}

std::mutex registryMutex;
/// The IMPL libraries holding the registrations (one per namespace), alive for the process.
std::map<std::string, std::unique_ptr<torch::Library>> libraries;
/// qualname -> its kernel (owned by the dispatcher's registration).
std::map<std::string, PlannedOp *> registered;

} // namespace

//===----------------------------------------------------------------------===//
// The C entry points (Python calls them through ctypes)
//===----------------------------------------------------------------------===//

#define KILN_TORCH_EXPORT __attribute__((visibility("default")))

extern "C" {

/// "MAJOR.MINOR.PATCH" of the torch this library was built against.
KILN_TORCH_EXPORT const char *kiln_torch_version() { return TORCH_VERSION; }

/// The message of the last failed call of this thread.
KILN_TORCH_EXPORT const char *kiln_torch_last_error() { return lastError.c_str(); }

/// Hands over the runtime's C API (kiln._runtime.c_api()). 0 on success.
KILN_TORCH_EXPORT int kiln_torch_init(int version, uintptr_t launch, uintptr_t release,
                                      uintptr_t lastErr) {
  return guarded([&] {
    if (version != KILN_C_API_VERSION)
      throw std::runtime_error("kiln._runtime speaks C API version " + std::to_string(version) +
                               ", this library " + std::to_string(KILN_C_API_VERSION));
    api.launch = reinterpret_cast<decltype(api.launch)>(launch);
    api.release = reinterpret_cast<decltype(api.release)>(release);
    api.lastError = reinterpret_cast<decltype(api.lastError)>(lastErr);
    return 0;
  });
}

/// Registers the CUDA kernel of op `qualname` ("ns::name"), whose recording twin
/// (same schema, its CUDA kernel the Python recorder) is `recorder`. 0 on success.
KILN_TORCH_EXPORT int kiln_torch_register(const char *qualname, const char *recorder) {
  return guarded([&] {
    if (!api.launch)
      throw std::runtime_error("kiln_torch_init was not called");
    auto &dispatcher = c10::Dispatcher::singleton();
    c10::OperatorHandle op = dispatcher.findSchemaOrThrow(qualname, "");
    c10::OperatorHandle rec = dispatcher.findSchemaOrThrow(recorder, "");
    const c10::FunctionSchema &schema = op.schema();
    std::string name(qualname);
    const size_t sep = name.find("::");
    std::lock_guard<std::mutex> lock(registryMutex);
    auto &lib = libraries[name.substr(0, sep)];
    if (!lib)
      lib = std::make_unique<torch::Library>(torch::Library::IMPL, name.substr(0, sep),
                                             c10::DispatchKey::CUDA, "kiln/_torch_ops.so", 0);
    if (registered.count(name))
      throw std::runtime_error(name + " has its C++ kernel already");
    auto kernel =
        std::make_unique<PlannedOp>(name, rec, schema.arguments().size(), schema.returns().size());
    registered[name] = kernel.get();
    lib->impl(name.substr(sep + 2).c_str(),
              torch::CppFunction::makeFromBoxedFunctor(std::move(kernel)));
    return 0;
  });
}

/// How many launch keys of op `qualname` replay a plan; -1 if it has no C++ kernel.
KILN_TORCH_EXPORT int kiln_torch_plans(const char *qualname) {
  return guarded([&] {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registered.find(qualname);
    if (it == registered.end())
      throw std::runtime_error(std::string(qualname) + " has no C++ kernel");
    return static_cast<int>(it->second->numPlans());
  });
}

/// Whether this thread is recording a call whose plan kiln_torch_install takes.
KILN_TORCH_EXPORT int kiln_torch_recording() { return pending != nullptr; }

/// Installs the plan of the call this thread is recording (JSON: {"op": qualname,
/// "plan": null | {...}}). 1 if installed, 0 if nothing was being recorded for
/// that op, -1 on error (the key then stays unplanned and records again).
KILN_TORCH_EXPORT int kiln_torch_install(const char *planJson) {
  return guarded([&] {
    if (pending == nullptr)
      return 0;
    json j = json::parse(planJson);
    PlannedOp *op = pending->op;
    if (j.at("op").get<std::string>() != op->name())
      return 0;
    std::unique_ptr<Plan> plan = parsePlan(j.at("plan"), op->numArgs(), op->numReturns());
    Key key = std::move(pending->key);
    pending = nullptr;
    op->install(std::move(key), std::move(plan));
    return 1;
  });
}

} // extern "C"
