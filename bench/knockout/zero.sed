# no zeroing of the next step's state-adjoint slots
/((t + 2) % 3).*= 0\.0f;/d
