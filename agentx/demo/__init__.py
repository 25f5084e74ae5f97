"""`agentx demo`: capture a scripted agent session, scrub it, replay it against serve-sim."""
