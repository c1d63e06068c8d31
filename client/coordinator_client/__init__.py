"""Client, wire models and Paimon format code for the Paimon Commit Coordinator."""
