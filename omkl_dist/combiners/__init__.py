"""Combiners of per-kernel classifiers: Hedge (OMKC), uniform (Perceptron(u)), leader (Perceptron(*))."""
