"""The commit path, one module a step, in the order a commit goes through them (pipeline calls them):

    intake            a door's request resolved into a Member, checked before any lock (intake,
                      transaction_intake, snapshot_proposals, proposal_files, file_checks, resends)
    queue             group commit: the commits to one table wait together for its lock (queue, in_flight)
    catch_up          under the lock, the table as it really is (catch_up, table_state, live_index,
                      reapplication, overwrite_watch)
    decide            each member built on top of the state: a Decision value (decide, snapshot_writer,
                      snapshot_acceptance, member)
    commit_point      one database transaction makes the decisions stand; `finish` after publication
    publish           snapshot-N on storage, created if absent, never overwritten
    answers           each member's answer, through its future

`pipeline.Committer` is the one orchestrator, for single commits (a table with M members) and multi-table
transactions (N tables, one member each) alike; `phases` times every step of every member.
"""
