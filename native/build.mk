# native/build.mk: the delay engine (filled in by the testbed work).
