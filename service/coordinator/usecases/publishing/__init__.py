"""Pushing the commit event feed out: to NATS JetStream (jetstream.py) and to webhooks (webhooks.py),
each by a relay (relay.py) that follows the outbox from a durable cursor under a lease shared by the
replicas; publishers.py builds them from the settings and answers the ops API."""
