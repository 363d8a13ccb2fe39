/* A synthetic template for the search-efficiency replay (bench/synth_space.py): only its
 * directives matter: the script gives every point a made-up time. */
/* kforge:param TILE_M = 256, 8, 16, 32, 64, 128 */
/* kforge:param TILE_N = 8, 16, 32, 64, 128, 256 */
/* kforge:param UNROLL = 16, 1, 2, 4, 8 */
/* kforge:param VEC = 1, 2, 4, 8 */
/* kforge:param BLOCK = 32, 64, 128, 256, 512 */
/* kforge:require TILE_M * TILE_N <= 8192 */
