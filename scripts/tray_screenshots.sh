#!/usr/bin/env bash
# Screenshots of the Root Guard tray under Xvfb, with trayer as the system-tray host.
#
#   scripts/tray_screenshots.sh            -> docs/screenshots/tray-{menu,prompt,window}.png
#
# Starts Xvfb, trayer and the tray on a private socket, connects two sessions and
# a pending batch request with the client library (tray/client.py), then drives
# the tray with xdotool and captures windows with ImageMagick's `import`.
# Needs: Xvfb trayer xdotool import (ImageMagick) xwininfo; as root, missing Debian
# packages are installed with apt-get.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
OUT=${OUT:-$ROOT/docs/screenshots}
SCREEN=${SCREEN:-1280x800x24}

need_packages=()
for tool in Xvfb:xvfb trayer:trayer xdotool:xdotool import:imagemagick xwininfo:x11-utils xsetroot:x11-xserver-utils; do
    command -v "${tool%%:*}" >/dev/null || need_packages+=("${tool##*:}")
done
# Qt's xcb platform plugin needs these X libraries at run time.
for lib in libxcb-cursor.so.0:libxcb-cursor0 libxcb-icccm.so.4:libxcb-icccm4 libxcb-keysyms.so.1:libxcb-keysyms1 \
           libxcb-image.so.0:libxcb-image0 libxcb-render-util.so.0:libxcb-render-util0 \
           libxkbcommon-x11.so.0:libxkbcommon-x11-0 libxcb-shape.so.0:libxcb-shape0; do
    ldconfig -p | grep -q "${lib%%:*}" || need_packages+=("${lib##*:}")
done
if ((${#need_packages[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "missing: ${need_packages[*]} (install them, e.g. apt-get install ${need_packages[*]})" >&2
        exit 1
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

WORK=$(mktemp -d /tmp/rg-shots.XXXXXX)
chmod 700 "$WORK"
pids=()
cleanup() {  # newest first: the driver and the tray before their X server
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[i]}" 2>/dev/null || true
        wait "${pids[i]}" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# A free display number.
display=90
while [[ -e /tmp/.X11-unix/X$display || -e /tmp/.X$display-lock ]]; do display=$((display + 1)); done
export DISPLAY=:$display
Xvfb "$DISPLAY" -screen 0 "$SCREEN" -nolisten tcp -noreset >"$WORK/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do xwininfo -root >/dev/null 2>&1 && break; sleep 0.1; done

# A grey desktop and a tray host in the top-right corner.
xsetroot -solid '#5f6b73' 2>/dev/null || true  # x11-xserver-utils, optional
trayer --edge top --align right --widthtype request --height 30 --SetDockType true \
       --transparent false --tint 0x2b2b2b --expand false --padding 4 >"$WORK/trayer.log" 2>&1 &
pids+=($!)
sleep 1

export QT_QPA_PLATFORM=xcb
export ROOTGUARD_CONFIG=$WORK/config.toml
export XDG_RUNTIME_DIR=$WORK/run
export XDG_CONFIG_HOME=$WORK/config
export XDG_STATE_HOME=$WORK/state
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
SOCK=$WORK/tray.sock
printf '# demo user configuration\nversion = 2\n' >"$ROOTGUARD_CONFIG"

(cd "$ROOT" && exec "$PY" -m tray --socket "$SOCK" --key-guard-ms 0 >"$WORK/tray.log" 2>&1) &
pids+=($!)
for _ in $(seq 200); do [[ -S $SOCK ]] && break; sleep 0.1; done
[[ -S $SOCK ]] || { echo "the tray did not start:" >&2; cat "$WORK/tray.log" >&2; exit 1; }

# The driver: two sessions with their status; a pending request once $WORK/ask exists.
cat >"$WORK/driver.py" <<'EOF'
import asyncio, os, sys
from lsp_bridge.approvals.client import Target, TrayClient

sock, work = sys.argv[1], sys.argv[2]
SHOP = "/Users/dev/shop"
WIDENED = {
    "version": 1, "session": "7f3a",
    "roots": [f"{SHOP}/packages/checkout", SHOP],
    "union": [SHOP],
    "entries": [{"path": SHOP, "origin": "folder", "reason": "workspace folder"}],
    "shadowed": [{"path": f"{SHOP}/packages/checkout", "by": SHOP}],
    "worktrees": [{"path": "/Users/dev/shop-wt/fix-tax", "mode": "request", "repository": SHOP,
                   "locked": False, "prunable": False}],
    "mounts": {"mounts": [], "roots_without_mount": [SHOP],
               "mounts_outside_union": [{"source": "/Users/dev/.cache/pnpm", "target": "/workspace/.pnpm"}]},
    "widened": True, "acknowledged": False, "inventory_pending": False,
    "widening": [{"folder": SHOP, "entry": f"{SHOP}/packages/checkout", "kind": "ancestor"}],
    "inventory": {"widens": True, "files_before": 340, "files_after": 61000, "ratio": 179.4,
                  "credentials": [{"path": f"{SHOP}/.env", "count": 4}, {"path": f"{SHOP}/infra/prod.tfvars", "count": 6}],
                  "git": [{"path": f"{SHOP}/.git", "bytes": 671088640, "commits": 53, "deleted_sensitive": [".env"]}],
                  "siblings": [f"{SHOP}/packages/p{i}" for i in range(29)],
                  "ci_roles": [{"path": f"{SHOP}/.github/workflows/deploy.yml", "roles": ["deploy-prod"]}]},
    "summary": "⚠ union ×180: +60,660 files, 3 secrets files, .git (53 commits)",
    "warnings": [{"severity": "warning", "code": "union-widened",
                  "message": f"{SHOP} widens {SHOP}/packages/checkout: 340 → 61,000 files"}],
}
CLEAR = {
    "version": 1, "session": "c21d", "roots": ["/Users/dev/notes"], "union": ["/Users/dev/notes"],
    "entries": [{"path": "/Users/dev/notes", "origin": "folder", "reason": "workspace folder"}],
    "shadowed": [], "worktrees": [], "mounts": None, "widened": False, "widening": [],
    "summary": "1 root", "warnings": [],
}

async def main():
    editor = TrayClient("7f3a", "Visual Studio Code", [f"{SHOP}/packages/checkout", SHOP], socket=sock)
    notes = TrayClient("c21d", "Neovim", ["/Users/dev/notes"], socket=sock)
    for client, status in ((editor, WIDENED), (notes, CLEAR)):
        assert await client.start(), "no tray"
        await client.publish_status(status)
    while not os.path.exists(os.path.join(work, "ask")):
        await asyncio.sleep(0.1)
    from lsp_bridge.approvals.preview import write_preview
    config = f"{SHOP}/.rootguard.toml"
    before = ('version = 2\n# Team rules: keep the agent in its package.\n[[paths]]\nid = "pnpm-store"\n'
              'path = "node_modules/.pnpm"\npolicies = { read = "allow", write = "deny" }\n')
    after = before + '\n# convenience\n[[paths]]\nid = "everything"\npath = "/"\npolicies = { read = "allow", write = "allow" }\n'
    preview = write_preview(config, before, after, config=True)
    targets = [Target(config, ".rootguard.toml", SHOP, "write")]
    asks = [editor.request_access("write_file", "write", targets, rule=None,
                                  reason=f"{config} is an active Root Guard configuration file; changing it needs approval",
                                  timeout=600, preview=preview) for _ in range(2)]
    await asyncio.gather(*asks)

asyncio.run(main())
EOF
(cd "$ROOT" && PYTHONPATH=$ROOT exec "$PY" "$WORK/driver.py" "$SOCK" "$WORK" >"$WORK/driver.log" 2>&1) &
pids+=($!)
sleep 2

mkdir -p "$OUT"
BACKGROUND='#5f6b73'

window_of() { xdotool search --sync --onlyvisible --name "$1" | head -1; }
geometry() {  # geometry WINDOW -> "x y width height"
    xdotool getwindowgeometry --shell "$1" | awk -F= '/^X=/{x=$2} /^Y=/{y=$2} /^WIDTH=/{w=$2} /^HEIGHT=/{h=$2} END {print x, y, w, h}'
}
click_tray_icon() {  # click_tray_icon BUTTON: the tray's icon, embedded in trayer's panel
    local x y w h
    read -r x y w h < <(geometry "$(xdotool search --name '^panel$' | head -1)")
    xdotool mousemove $((x + w / 2)) $((y + h / 2)) click "$1"
}
newest_visible() { xdotool search --onlyvisible --classname rootguard-tray | sort -n | tail -1; }

# Dismiss the "union widened" balloon if it is still up (a click closes it).
balloon=$(newest_visible)
if [[ -n $balloon ]]; then
    read -r bx by bw bh < <(geometry "$balloon")
    ((bw > 100)) && xdotool mousemove $((bx + bw / 2)) $((by + bh / 2)) click 1 && sleep 0.5
fi

# 1. The main window, opened from the tray menu (Up, Up = "Open Root Guard…").
click_tray_icon 3
sleep 0.8
xdotool key Up Up Return
win=$(window_of '^Root Guard$')
xdotool windowmove "$win" 40 60
sleep 1
import -window "$win" "$OUT/tray-window.png"
xdotool windowunmap "$win"

# 2. The approval prompt: two identical batch requests make one prompt "×2".
touch "$WORK/ask"
prompt=$(window_of 'may the agent do this')
xdotool windowmove "$prompt" 120 160
sleep 1.5
import -window "$prompt" "$OUT/tray-prompt.png"
xdotool windowunmap "$prompt"
sleep 0.3

# 3. The tray menu, with the widened window's submenu open.
click_tray_icon 3
sleep 0.8
# Down: "Answer 1 pending approval…", Down: the first window, Right: its submenu.
xdotool key Down Down Right
sleep 1.2
import -window root "$WORK/screen.png"
convert "$WORK/screen.png" -bordercolor "$BACKGROUND" -border 1 -fuzz 2% -trim +repage \
    -bordercolor "$BACKGROUND" -border 16 "$OUT/tray-menu.png"
xdotool key Escape Escape

for shot in tray-menu tray-prompt tray-window; do
    [[ -s $OUT/$shot.png ]] || { echo "missing $OUT/$shot.png" >&2; exit 1; }
done
echo "wrote $OUT/tray-menu.png $OUT/tray-prompt.png $OUT/tray-window.png"
