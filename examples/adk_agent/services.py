"""ADK loads this file from the agents folder (``adk web`` / ``adk api_server``): it makes
``--memory_service_uri=graphmem+...`` URIs work.

    adk web examples/adk_agent --memory_service_uri=graphmem+file:///tmp/memory.journal
    adk api_server examples/adk_agent --memory_service_uri=graphmem+neo4j://127.0.0.1:7687
"""

from graphmem.adk import register_with_adk

register_with_adk()  # keyword arguments (project_id=, limit=, ...) go to every memory service built
