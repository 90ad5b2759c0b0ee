"""Benchmarks of tdse + mgemm: one runner (``python -m benchmarks``, :mod:`.runner`),
its suites (:mod:`.suites`) and the results index (:mod:`.index`)."""
