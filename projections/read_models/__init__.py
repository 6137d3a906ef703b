"""Read models, one module per model, named after its projection (each with its projection,
row structs and reader).

actor_lifecycle.py  ActorLifecycle: actor status, counters and incidents
delegations.py      Delegations: their lifecycles, overdue ones
handoff_routes.py   HandoffRoutes: which agent answers each (channel, chat_id)
mcp_health.py       McpHealth: MCP servers, their tools, grants and access requests
session_history.py  SessionHistory: each session's messages, tool calls and replies
stream_catalog.py   StreamCatalog: every stream with its kind and position range
subagent_tasks.py   SubagentTasks: spawned subagent tasks and how each ended
task_boards.py      TaskBoards: team task boards and teams
timers.py           Timers: durable timers (pending ones, when due, what they wait on)
tool_audit.py       ToolAudit: each tool call with how it ended and every reason given
usage.py            ModelUsage: model replies' tokens and estimated cost, totals by
                    agent, session, model and day
"""
