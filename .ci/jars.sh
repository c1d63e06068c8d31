#!/usr/bin/env bash
# Fetch the pinned Java jars the Flink lane needs from Maven Central into .cache/jars/ (git-ignored),
# each checked against the SHA-1 Maven Central publishes beside it. Idempotent: a jar already there whose
# checksum matches is kept, a partial or corrupt one is fetched again. Never commit a jar.
#
# Paimon's Flink connector for Flink 2.0: Maven Central serves paimon-flink-2.0 2.0.0, but not
# paimon-flink-2.1/2.2 nor paimon-flink-action, so PyFlink is pinned to 2.0.x (requirements/flink.txt).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${JARS_CACHE:-$ROOT/.cache/jars}"
CENTRAL="${MAVEN_CENTRAL:-https://repo1.maven.org/maven2}"

# group:artifact:version, one a line.
JARS=(
  "org.apache.paimon:paimon-flink-2.0:2.0.0"
  # Paimon's catalogs need Hadoop's classes even on a local warehouse (CatalogContext loads a Hadoop
  # Configuration), and neither PyFlink nor the connector ships them: Paimon's Flink quick start adds this jar.
  "org.apache.flink:flink-shaded-hadoop-2-uber:2.8.3-10.0"
)

mkdir -p "$CACHE"
for coordinate in "${JARS[@]}"; do
  IFS=: read -r group artifact version <<<"$coordinate"
  name="$artifact-$version.jar"
  url="$CENTRAL/${group//.//}/$artifact/$version/$name"
  expected="$(curl -fsSL --retry 3 "$url.sha1" | awk '{print $1}')"
  if [[ ! "$expected" =~ ^[0-9a-f]{40}$ ]]; then
    echo "jars.sh: no SHA-1 published for $url" >&2
    exit 1
  fi
  if [[ -f "$CACHE/$name" ]] && [[ "$(sha1sum "$CACHE/$name" | awk '{print $1}')" == "$expected" ]]; then
    continue
  fi
  echo "jars.sh: fetching $name"
  curl -fsSL --retry 3 -o "$CACHE/$name.part" "$url"
  actual="$(sha1sum "$CACHE/$name.part" | awk '{print $1}')"
  if [[ "$actual" != "$expected" ]]; then
    rm -f "$CACHE/$name.part"
    echo "jars.sh: $name has SHA-1 $actual, Maven Central publishes $expected" >&2
    exit 1
  fi
  mv "$CACHE/$name.part" "$CACHE/$name"
done
