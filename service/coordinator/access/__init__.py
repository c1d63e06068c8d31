"""Who may do what: bearer tokens with roles and grants."""
