#!/usr/bin/env bash
# Makes docs/images/report-comparison.png, the README's picture of a comparison report: two webapi
# runs on the same 40 WAPIIBench tasks (10 per API) -- the gold model, and a replay of its answers
# with some of them edited to be wrong (a wrong URL, a wrong method, no credentials, cut-off code)
# -- compared with `callbench report A B`, and the page shot by headless Chromium.
#
# Needs the WAPIIBench data ($CALLBENCH_DATA_DIR, default ../shared/data), a headless Chromium
# (apt-get install chromium-headless-shell) and Pillow (for cropping and palette compression).
# Usage: bash scripts/make_screenshot.sh [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-docs/images/report-comparison.png}")"
PY="$(realpath -s "${PYTHON:-.venv/bin/python}")"
CB="$(realpath -s "${CALLBENCH:-.venv/bin/callbench}")"
DATA="$(realpath "${CALLBENCH_DATA_DIR:-../shared/data}")"
BROWSER="$(command -v chromium-headless-shell || command -v chromium || command -v google-chrome)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"  # the report shows the run directories as given: runs/gold, runs/edited

ids="$(for api in asana slack google_calendar_v3 google_sheet_v4; do
    for i in 0 1 2 3 4 5 6 7 8 9; do printf '%s_%s,' "$api" "$i"; done
done)"
ids="${ids%,}"

"$CB" run webapi --model gold --ids "$ids" --data "$DATA" --out runs --run-id gold --no-progress >/dev/null
"$CB" export runs/gold --format jsonl --out gold.jsonl >/dev/null

# the replay: the gold answers, one in three edited (which edit depends on the sample)
"$PY" - gold.jsonl edited.jsonl <<'EOF'
import json
import re
import sys

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
out = []
for i, row in enumerate(sorted(rows, key=lambda r: r["sample_id"])):
    text = row["raw_output"]
    kind = i % 9
    if kind == 1:  # a wrong endpoint
        text = re.sub(r'("https?://[^"]*/)[^/"]+"', r'\1nothing"', text, count=1)
    elif kind == 4:  # a wrong method
        text = re.sub(r"^(get|post|put|patch|delete)\(", lambda m: ("post(" if m.group(1) != "post" else "put("), text)
    elif kind == 7:  # the credentials left out
        text = re.sub(r',?\s*"Authorization": "[^"]*"', "", text)
    elif i % 13 == 5:  # code cut off mid-call
        text = text[: len(text) // 2]
    out.append({"id": row["sample_id"], "output": text})
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write("\n".join(json.dumps(r) for r in out) + "\n")
EOF
"$CB" run webapi --model replay:edited.jsonl --ids "$ids" --data "$DATA" --out runs --run-id edited --no-progress >/dev/null
"$CB" report runs/gold runs/edited --label gold --label edited --out cmp >/dev/null

"$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size=1280,1600 --screenshot=shot.png "file://$WORK/cmp/report.html" 2>/dev/null
mkdir -p "$(dirname "$OUT")"
# crop the empty right margin, and keep the file small (a 256-colour palette)
"$PY" - shot.png "$OUT" <<'EOF'
import sys

from PIL import Image, ImageChops

img = Image.open(sys.argv[1]).convert("RGB")
bg = Image.new("RGB", img.size, (255, 255, 255))
box = ImageChops.difference(img, bg).getbbox() or (0, 0, *img.size)
img = img.crop((0, 0, min(img.width, box[2] + 24), img.height))
img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(sys.argv[2], optimize=True)
EOF
echo "$OUT ($(stat -c %s "$OUT") bytes)"
