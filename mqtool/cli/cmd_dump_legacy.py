"""``mqtool dump jafka`` and ``mqtool dump metaq``."""
