"""StateGraph builders (route, evaluate, evolve). Each module only wires nodes and edges."""
