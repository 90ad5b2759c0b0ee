"""The measuring tools: ``mgemm bench`` (:mod:`.bench`), ``bench-expm``
(:mod:`.bench_expm`), ``probe`` (:mod:`.probe`), ``tune`` (:mod:`.tune`), timelines
(:mod:`.timeline`), balance calibration (:mod:`.calibrate`) and what they share
(:mod:`.common`).  They depend on the core (gemm, expm, dist) and below; nothing in the
core imports them."""
