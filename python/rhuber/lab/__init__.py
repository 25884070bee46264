"""What measures, trains or checks, and needs the estimator to do it: the tuner's measurement
collection, calibration and validation, the golden corpus, the precision report and the
falsification scorecard."""
