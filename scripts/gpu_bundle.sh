#!/usr/bin/env bash
# Downloads what the borrowed GPU machine may lack (scripts/gpu_bundle.txt lists it) into
# .gpu-bundle/ (or $RH_GPU_BUNDLE), for `scripts/gpu_check.sh --offline` there:
#
#   scripts/gpu_bundle.sh          (make gpu-bundle)
#
# wheels/: cp312 manylinux x86-64 wheels (pip download); debs/: amd64 Debian packages
# (apt-get download); MANIFEST.tsv: kind, name, module, file, bytes, sha256 of each. Idempotent:
# what is there already is kept, what the list no longer names is removed. Fails above 40 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle="${RH_GPU_BUNDLE:-.gpu-bundle}"
list=scripts/gpu_bundle.txt
limit=$(( 40 * 1024 * 1024 ))
python="${PYTHON:-python3}"
mkdir -p "$bundle/wheels" "$bundle/debs"

if [[ "$(dpkg --print-architecture 2>/dev/null)" != amd64 ]]; then
  echo "gpu-bundle: apt-get download needs an amd64 Debian machine (the GPU machine is x86-64)" >&2
  exit 1
fi

declare -A keep=()
apt_updated=0
while read -r kind spec module; do
  case "$kind" in
    wheel)
      name="${spec%%==*}" version="${spec#*==}"
      stem="$(echo "$name" | tr '-' '_')-$version-"
      file="$(cd "$bundle/wheels" && ls -- "$stem"*.whl 2>/dev/null | head -1 || true)"
      if [[ -z "$file" ]]; then
        "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
          --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
          --platform manylinux2014_x86_64 -d "$bundle/wheels" "$spec"
        file="$(cd "$bundle/wheels" && ls -- "$stem"*.whl | head -1)"
      fi
      keep["wheels/$file"]="wheel	$name	$module"
      ;;
    deb)
      file="$(cd "$bundle/debs" && ls -- "${spec}_"*_{amd64,all}.deb 2>/dev/null | head -1 || true)"
      if [[ -z "$file" ]]; then
        if (( ! apt_updated )) && ! apt-cache show "$spec" >/dev/null 2>&1; then
          apt-get update -qq
        fi
        apt_updated=1
        (cd "$bundle/debs" && apt-get download -qq -o APT::Sandbox::User=root "$spec:amd64")
        file="$(cd "$bundle/debs" && ls -- "${spec}_"*_{amd64,all}.deb 2>/dev/null | head -1 || true)"
        [[ -n "$file" ]] || { echo "gpu-bundle: apt-get download $spec left no .deb" >&2; exit 1; }
      fi
      keep["debs/$file"]="deb	$spec	-"
      ;;
    ""|"#"*) ;;
    *) echo "gpu-bundle: $list: unknown kind '$kind'" >&2; exit 1 ;;
  esac
done < <(sed -e 's/#.*//' "$list")

# Remove what the list no longer names (an old version would make two of one package).
for path in "$bundle"/wheels/* "$bundle"/debs/*; do
  [[ -e "$path" ]] || continue
  rel="${path#"$bundle"/}"
  if [[ -z "${keep[$rel]+x}" ]]; then
    echo "gpu-bundle: removing $rel (not in $list)"
    rm -f -- "$path"
  fi
done

manifest="$bundle/MANIFEST.tsv"
{
  printf 'kind\tname\tmodule\tfile\tbytes\tsha256\n'
  for rel in $(printf '%s\n' "${!keep[@]}" | sort); do
    printf '%s\t%s\t%s\t%s\n' "${keep[$rel]}" "$rel" "$(stat -c %s "$bundle/$rel")" \
      "$(sha256sum "$bundle/$rel" | cut -d' ' -f1)"
  done
} > "$manifest"

total=$(du -cb "$bundle"/wheels/* "$bundle"/debs/* "$manifest" | tail -1 | cut -f1)
echo "gpu-bundle: $bundle"
awk -F'\t' 'NR > 1 { printf "  %-70s %8.1f kB\n", $4, $5 / 1024 }' "$manifest"
printf 'gpu-bundle: %d files, %.1f MB in all (limit 40 MB)\n' "${#keep[@]}" "$(echo "$total / 1048576" | bc -l)"
if (( total > limit )); then
  echo "gpu-bundle: over the 40 MB limit" >&2
  exit 1
fi
