"""Tools run by hand, which pytest does not collect: benchmark.py (instructions and timings against a bare
round trip and the independent implementation; throughput.py measures its HTTP and fuzz figures),
scaling.py (cost against input size) and mutants.py (seeded mutation testing of the reference against the
suites)."""
