"""Families of the Kafka, Jafka and MetaQ fixtures (registered into fuzz.harness.FAMILIES)."""
