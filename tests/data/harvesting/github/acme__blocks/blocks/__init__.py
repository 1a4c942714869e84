from .layers import FeedForward
