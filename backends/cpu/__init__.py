"""CPU backend (numpy): NC4HW4 feature maps, convolution strategies in compute/."""
