from . import agent as agent
