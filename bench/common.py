"""Timing helpers shared by the GPU benchmarks: CUDA events, warm-up, medians, CUDA graphs,
and the measured copy bandwidth (the memory ceiling)."""

import statistics
import time

import torch


def time_ms(fn, inputs, batch=20, reps=15, warmup=3):
    """Median time per call in ms, calls issued back to back on the stream: CUDA events around
    `batch` calls (rotating through `inputs`), median over `reps` batches. Host overhead is
    hidden where the GPU work per call is longer; where it is not, this is what a caller sees.
    """
    for i in range(warmup * batch):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(batch):
            fn(inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def capture_graph(fn, inputs, batch=20):
    """A CUDA graph of `batch` calls of fn (rotating through `inputs`), warmed up (and compiled)
    outside the capture and replayed once."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):  # warm-up / compile outside the capture
            fn(inputs[i % len(inputs)])
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(batch):
            fn(inputs[i % len(inputs)])
    graph.replay()
    torch.cuda.synchronize()
    return graph


def replay_ms(graph, batch=20, reps=15):
    """Median GPU time per call of a graph of `batch` calls: CUDA events around each of `reps`
    replays."""
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def graph_time_ms(fn, inputs, batch=20, reps=15):
    """Median GPU time per call with the launches captured in a CUDA graph (no host cost)."""
    return replay_ms(capture_graph(fn, inputs, batch), batch, reps)


def copy_bandwidth_gbs():
    n = 1 << 30  # 2 GiB of bf16 each way
    src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    ms = time_ms(lambda s: dst.copy_(s), [src], batch=5, reps=10)
    return 2 * src.numel() * 2 / ms / 1e6



#: Cycles a second of ``torch.cuda._sleep``'s spin (the H200's SM clock under load, ~1.98 GHz;
#: a lower clock only lengthens the spin).
SPIN_HZ = 2.0e9
#: Bytes written to flush the L2 before an isolated call (the H200's L2 is 60 MB; as triton's
#: do_bench, 256 MiB).
L2_FLUSH_BYTES = 256 << 20
_flush_buffer = None


def isolated_time_ms(fn, inputs, reps=31, warmup=3):
    """Median GPU time of one call with nothing around it: before each call the GPU first
    spins (``torch.cuda._sleep``) for longer than the host takes to issue the call, then a
    256 MiB write flushes the L2, then CUDA events bracket the call alone. So the inputs come
    from memory, no other launch overlaps the call (a PDL launch has no kernel of its own to
    overlap: the event between them completes with the flush), and the host's cost of
    issuing it is hidden (the GPU never waits for the launch: a Python wrapper's tens of
    microseconds would otherwise be counted). ``fn(x)`` for each x of ``inputs``, rotating."""
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = torch.empty(L2_FLUSH_BYTES // 4, device="cuda", dtype=torch.int32)
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    host_s = (time.perf_counter() - t0) / warmup  # an upper bound: includes GPU time
    torch.cuda.synchronize()
    spin_cycles = int((2 * host_s + 20e-6) * SPIN_HZ)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        torch.cuda._sleep(spin_cycles)
        _flush_buffer.zero_()
        starts[i].record()
        fn(inputs[i % len(inputs)])
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
