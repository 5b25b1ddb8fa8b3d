"""Probability distributions (``torch.distributions``): sampling, log-densities, entropies
and KL divergences, differentiable in the parameters (``rsample`` for the
reparameterizable ones), for policy gradients, VAEs and friends.

What is here: ``Normal``, ``Uniform``, ``Bernoulli``, ``Categorical``, ``kl_divergence``
(for each pair of the same family) and ``constraints``.  Parameters and values are
checked as in PyTorch (``validate_args``, on by default).
"""

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["constraints", "Distribution", "Normal", "Uniform", "Bernoulli", "Categorical",
           "kl_divergence", "register_kl"]
