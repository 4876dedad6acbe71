# Sourced: installs the Debian packages named in $@ that are missing (root or sudo), or says how to.
#   softhsm2 — the PKCS#11 token the signer's HSM backend is tested against
#   chromium — the headless browser that renders the public verifier page in tests
ensure_system_packages() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  step "installing ${missing[*]} (Debian packages)"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      echo "Missing Debian packages: ${missing[*]}. Install them (apt-get install -y ${missing[*]}) and run this again." >&2
      exit 1
    fi
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
}
