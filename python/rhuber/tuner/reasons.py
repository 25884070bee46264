"""Why a stream's plan runs (``est.plan_.reason``; docs/tuner.md, "The advisor"): the words the
advisor decides with and the stream's session reports, kept apart from both so that neither
imports the other for them."""

CHOSEN = "chosen by the model"
OUT_OF_DISTRIBUTION = "default: out of distribution"
GAIN_BELOW_MARGIN = "default: gain below margin"
CLASSIFIER_DISAGREES = "default: plan classifier disagrees"
NO_MODEL = "default: no model"
RULE_REGION = "default: the rule (the model does not beat it here)"
TRIAL = "trial of the model's candidates"
RULE_FIRST = "the rule's plan first"
TRIED = "chosen by trial"
TOO_SHORT = "default: stream too short for trials"
REVERTED = "reverted: measured slower"
LAMM_STALLED = "proximal Newton: LAMM did not converge"
PINNED = "pinned by plan="
PINNED_ENV = "pinned by RH_PLAN"
USER_BACKEND = "set by backend="

#: What :func:`available` answers while this process has not loaded its advisor yet.
UNLOADED = "unloaded"
