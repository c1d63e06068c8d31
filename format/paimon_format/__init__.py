"""Paimon's on-disk format: BinaryRow, bucket hash, partition paths, schema/snapshot JSON, manifest Avro."""
