# Thin aliases for ./dev, which works without make on a fresh machine.
.PHONY: setup demo test bench
setup demo test bench:
	./dev $@
