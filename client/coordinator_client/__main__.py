"""`python -m coordinator_client`: the `coordinator-client` maintenance command."""

import sys

from coordinator_client.cli import main

sys.exit(main())
