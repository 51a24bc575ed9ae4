-- Blocks of the working copy in use and free (free blocks are copied too, so they decide when to compact).
SELECT total_blocks, free_blocks, block_size FROM pragma_database_size() WHERE database_name = current_database()
