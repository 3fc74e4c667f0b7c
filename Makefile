# kiln: the two commands are `make bundle` and `make test`; each sets itself up.
BUILD    ?= build
JOBS     ?= $(shell nproc)
PYTHON   := $(CURDIR)/.venv/bin/python
CMAKE_ARGS ?=

.PHONY: all setup configure build bundle test test-lit test-unit test-python test-gpu device-pack clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DPython3_EXECUTABLE=$(PYTHON) $(CMAKE_ARGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# AOT-compile the Kimi K3 library for sm_90a, sm_100a, sm_103a into build/kimi_k3.kbundle.
bundle: build
	PYTHONPATH=$(BUILD)/python $(PYTHON) -m kiln.aot kernels_dsl.kimi_k3 \
	  --arch sm_90a,sm_100a,sm_103a -o $(BUILD)/kimi_k3.kbundle
	PYTHONPATH=$(BUILD)/python $(PYTHON) -m kiln bundle inspect $(BUILD)/kimi_k3.kbundle

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The GPU tier alone (test/gpu/gpu_tier.py: skipped without a GPU, fails if one cannot be used).
test-gpu: build
	PYTHONPATH=$(BUILD)/python:$(CURDIR) $(PYTHON) test/gpu/gpu_tier.py

# Self-contained folder for the GPU machine (CPython 3.12, MLIR/LLVM static): dist/device.
device-pack: bundle
	scripts/device-pack.sh

clean:
	rm -rf $(BUILD) dist
