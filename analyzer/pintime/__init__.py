"""pintime: execution times of microcontroller code from a GPIO pin recorded by a sound card."""
