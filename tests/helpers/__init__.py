"""Code the tests share: dump writers, the app driven by Pilot, the CLI in a subprocess, paths."""
