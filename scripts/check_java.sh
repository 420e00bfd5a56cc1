#!/usr/bin/env bash
# PySpark 4 needs Java 17 or newer; say what to install instead of failing deep inside Spark.
set -u
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then java="$JAVA_HOME/bin/java"; else java=$(command -v java || true); fi
if [ -z "$java" ]; then
  echo "rmqsim needs Java 17 or newer and found none." >&2
  echo "Install it, for example: sudo apt-get install openjdk-17-jre-headless (Debian/Ubuntu)," >&2
  echo "brew install openjdk@17 (macOS), or set JAVA_HOME to a JDK 17+." >&2
  exit 1
fi
version=$("$java" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)
major=${version%%.*}
[ "$major" = "1" ] && major=$(echo "$version" | cut -d. -f2)
if ! [ "$major" -ge 17 ] 2>/dev/null; then
  echo "rmqsim needs Java 17 or newer; $java is version '${version:-unknown}'." >&2
  echo "Install openjdk-17-jre-headless (or newer) and put it first on PATH, or set JAVA_HOME." >&2
  exit 1
fi
