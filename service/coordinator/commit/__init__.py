"""The commit path, one module a step, in the order a commit goes through them (pipeline calls them):

    intake            a door's request resolved into a Member, checked before any lock (intake,
                      transaction, snapshot_proposals, proposal_files, file_checks, resends)
    queue             group commit: the commits to one table wait together for its lock (queue, in_flight,
                      admission: 429 when the wait would outlast the lease)
    batch             the groups of many tables ready at the same moment go together (batch)
    catch_up          under the lock, the table as it really is (catch_up, table_state, live_index,
                      reapplication, overwrite_watch)
    decide            each member built on top of the state: a Decision value (decide, snapshot_writer,
                      snapshot_acceptance, member)
    commit_point      the decisions stand, each table on its own (or all or nothing); `finish` after
                      publication (one statement each on PostgreSQL: db/repositories/one_statement.py)
    publish           snapshot-N on storage, created if absent, never overwritten
    answers           each member's answer, through its future

`pipeline.Committer` is the one orchestrator and `try_commit.TryCommit` its one decide-and-commit loop,
for groups (a table with M members), batches of groups and multi-table transactions (N tables, one member
each) alike; `collaborators` is what they are built with; `phases` times every step of every member.
"""
