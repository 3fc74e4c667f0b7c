"""The kiln package is built in floors (docs/architecture.md): every import, at module level or
inside a function, points down, and none closes a circle.

    front   kiln (the package's __init__: imports from every floor, imported by none)
    top     kiln.__main__  >  kiln.aot, kiln.testing, kiln.ops  >  kiln.autotune  >  kiln.jit
            >  kiln.interpreter, kiln.cache, kiln.torch_library
    middle  kiln.compiler | kiln.runtime, kiln.distributed   (never each other)
    bottom  kiln.host  >  kiln.language
    native  kiln._C, kiln._runtime, kiln._version (leaves)

Each package's rank is below; an import between two packages must go to a lower rank. A
function-level import of a kiln module is allowed only where it loads something optional (an
extension, numpy), never to dodge a circle: ``DEFERRED_OK`` lists them with the reason.
"""

import ast
import os
import subprocess
import sys
import textwrap

import kiln

PACKAGE_DIR = os.path.dirname(os.path.abspath(kiln.__file__))

#: Rank of each package (an import must go to a lower rank); modules inherit their package's.
RANKS = {
    "kiln._C": 0, "kiln._runtime": 0, "kiln._version": 0,
    "kiln.language": 1,
    "kiln.host": 2,
    "kiln.compiler": 3, "kiln.runtime": 3, "kiln.distributed": 3,
    "kiln.cache": 4, "kiln.interpreter": 4,
    "kiln.jit": 5,
    "kiln.autotune": 6,
    "kiln.aot": 7, "kiln.testing": 7, "kiln.ops": 7,
    "kiln.__main__": 8,
    "kiln.torch_library": 4,
    "kiln": 9,
}
FLOORS = {0: "native", 1: "bottom", 2: "bottom", 3: "middle", 4: "top", 5: "top", 6: "top",
          7: "top", 8: "top", 9: "front"}

#: Who may import the compiler extension: the runtime-only install has none.
MAY_IMPORT_C = {"kiln.compiler", "kiln.aot"}

#: Function-level imports of kiln modules, and why they wait.
DEFERRED_OK = {
    ("kiln.compiler.compiler", "kiln._C"): "the compiler extension loads on the first compile",
    ("kiln.aot", "kiln._C"): "the command line checks the archs with the extension",
    ("kiln.host.args", "kiln._runtime"): "the runtime extension encodes tensor maps",
    ("kiln.host.tensor_descriptor", "kiln._runtime"): "the runtime extension encodes tensor maps",
    ("kiln.jit", "kiln.interpreter"): "numpy loads only when a kernel is interpreted",
}

NATIVE = ("kiln._C", "kiln._runtime")


def _modules():
    mods = {}
    for root, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))[:-3]
                name = rel.replace(os.sep, ".")
                if name.endswith(".__init__"):
                    name = name[:-len(".__init__")]
                mods[name] = path
    return mods


MODULES = _modules()


def _owner(name):
    """The module of MODULES (or native extension) that an imported name lives in."""
    while name not in MODULES and name not in NATIVE:
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return name


def _targets(module, node, is_package):
    """kiln modules an import statement of ``module`` loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module if is_package else module.rsplit(".", 1)[0]
            parts = base.split(".")
            base = ".".join(parts[:len(parts) - (node.level - 1)])
            full = base + ("." + node.module if node.module else "")
        else:
            full = node.module or ""
        names = []
        for a in node.names:  # `from . import x` imports submodule x when there is one
            sub = f"{full}.{a.name}"
            names.append(sub if sub in MODULES or sub in NATIVE else full)
    out = []
    for n in names:
        if n == "kiln" or n.startswith("kiln."):
            owner = _owner(n)
            if owner is not None and owner != module:
                out.append(owner)
    return out


def import_graph():
    """{(importer, imported): "module" or "function"} over every kiln module's imports."""
    edges = {}
    for module, path in MODULES.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith("__init__.py")

        def walk(node, in_function):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for t in _targets(module, child, is_package):
                        kind = "function" if in_function else "module"
                        if edges.get((module, t)) != "module":
                            edges[(module, t)] = kind
                walk(child, in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        walk(tree, False)
    return edges


def rank(module):
    best = None
    for pkg in RANKS:
        if module == pkg or module.startswith(pkg + "."):
            if best is None or len(pkg) > len(best):
                best = pkg
    assert best is not None, f"{module} has no floor: add it to RANKS in {__file__}"
    return RANKS[best], best


def _cycles(edges):
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_floor():
    for module in MODULES:
        rank(module)


def test_no_import_circle():
    cycles = _cycles(import_graph())
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_every_import_points_down():
    bad = []
    for (a, b), kind in sorted(import_graph().items()):
        (ra, pa), (rb, pb) = rank(a), rank(b)
        if pa != pb and rb >= ra:
            bad.append(f"{a} -> {b} ({kind}-level import; {FLOORS[ra]} floor rank {ra} "
                       f"to rank {rb})")
    assert not bad, "imports that do not point down:\n  " + "\n  ".join(bad)


def test_compiler_and_runtime_stay_apart():
    edges = import_graph()
    bad = [f"{a} -> {b}" for a, b in edges
           if (rank(a)[1], rank(b)[1]) in (("kiln.compiler", "kiln.runtime"),
                                           ("kiln.runtime", "kiln.compiler"))]
    assert not bad, "the compiler and the runtime import each other: " + ", ".join(bad)


def test_only_the_compiler_loads_the_compiler_extension():
    bad = [f"{a} -> {b}" for a, b in import_graph()
           if b == "kiln._C" and rank(a)[1] not in MAY_IMPORT_C]
    assert not bad, "kiln._C imported outside the compiler: " + ", ".join(bad)


def test_deferred_imports_are_for_optional_dependencies():
    bad = [f"{a} -> {b}" for (a, b), kind in sorted(import_graph().items())
           if kind == "function" and (a, b) not in DEFERRED_OK]
    assert not bad, ("function-level imports of kiln modules (import at module level, or say "
                     "in DEFERRED_OK why it waits): " + ", ".join(bad))


def test_the_graph_is_what_the_docs_draw():
    """The arrows the test sees exist (a parser that found nothing would pass everything)."""
    edges = import_graph()
    for edge in [("kiln.jit", "kiln.compiler.compiler"), ("kiln.jit", "kiln.runtime"),
                 ("kiln.runtime", "kiln.host"), ("kiln.compiler.compiler", "kiln.host"),
                 ("kiln.host.tensors", "kiln.language.core"),
                 ("kiln.compiler.semantic", "kiln.language.errors")]:
        assert edge in edges, edge


def _run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(PACKAGE_DIR)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_runtime_and_language_import_without_the_compiler_extension():
    """The runtime-only install (no kiln._C): the runtime loads and reads a bundle, the
    language and the host rules import, and nothing asks for the extension."""
    r = _run("""
        import sys
        sys.modules["kiln._C"] = None  # import kiln._C raises ImportError
        import kiln.runtime, kiln.language as kl, kiln.host
        from kiln.runtime import Bundle, BundleWriter
        w = BundleWriter("test")
        w.add_kernel({"name": "k", "symbol": "k", "params": [
            {"name": "n", "kind": "scalar", "dtype": "i32"}], "threads_per_block": 32},
            [("sm_90a", "cubin", b"\\x7fELF" + bytes(60))])
        b = Bundle.from_bytes(w.serialize())
        assert b.names() == ["k"], b.names()
        b.kernel("k")[(0,)](5)  # an empty grid launches nothing
        assert not kiln.compiler.compiler_available()
        assert kiln.host.normalize_grid((2, 3), "k") == (2, 3, 1)
        assert kl.bfloat16.short == "bf16"
        assert sys.modules.get("kiln._C") is None
        print("ok")
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
