"""The living benchmarks, each run from the repository root as `python -m bench.NAME`.

They print figures against baselines measured in the same run; the labelled sets they read are
in data/eval/, the servers and the app driver they share with the tests in testkit/.
"""
