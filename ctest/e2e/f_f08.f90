! Fortran with `use mpi_f08` (2 ranks): MPI_Send / MPI_Recv with MPI_STATUS_IGNORE and with a
! type(MPI_Status), MPI_Isend / MPI_Irecv with MPI_Waitall(MPI_STATUSES_IGNORE), MPI_Wait,
! MPI_Sendrecv, MPI_Allreduce and MPI_Reduce with MPI_IN_PLACE, MPI_Bcast, MPI_Alltoall, and
! MPI_Comm_split + MPI_Barrier on the split communicator. Recorded under the C names.
program f_f08
  use mpi_f08
  use invmw_expect
  implicit none
  integer :: rank, nprocs, peer, i, n
  type(MPI_Request) :: reqs(4), r
  type(MPI_Status) :: st
  type(MPI_Comm) :: sub
  double precision :: a(300), b(300)
  integer :: iv(20), jv(20)

  call MPI_Init()
  call ex_call('MPI_Init', 0, 0)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  if (nprocs /= 2) stop 2
  peer = 1 - rank
  a = rank + 1
  iv = rank + 1

  ! 3 messages of 40 doubles 1 -> 0 into room for 300; then 17 doubles 0 -> 1 with a status.
  do i = 1, 3
    if (rank == 1) then
      call MPI_Send(a, 40, MPI_DOUBLE_PRECISION, 0, i, MPI_COMM_WORLD)
      call ex_call('MPI_Send', 40*8, 0)
    else
      call MPI_Recv(b, 300, MPI_DOUBLE_PRECISION, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      call ex_call('MPI_Recv', 0, 40*8)
    end if
  end do
  if (rank == 0) then
    call MPI_Send(a, 17, MPI_DOUBLE_PRECISION, 1, 9, MPI_COMM_WORLD)
    call ex_call('MPI_Send', 17*8, 0)
  else
    call MPI_Recv(b, 300, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, st)
    call ex_call('MPI_Recv', 0, 17*8)
    call MPI_Get_count(st, MPI_DOUBLE_PRECISION, n)
    if (n /= 17 .or. st%MPI_SOURCE /= 0) stop 3
  end if

  ! Nonblocking: receives of 25 and 35 doubles (room for 100 each), matching sends.
  call MPI_Irecv(b, 100, MPI_DOUBLE_PRECISION, peer, 11, MPI_COMM_WORLD, reqs(1))
  call ex_call('MPI_Irecv', 0, 25*8)
  call MPI_Irecv(b(101), 100, MPI_DOUBLE_PRECISION, peer, 12, MPI_COMM_WORLD, reqs(2))
  call ex_call('MPI_Irecv', 0, 35*8)
  call MPI_Isend(a, 25, MPI_DOUBLE_PRECISION, peer, 11, MPI_COMM_WORLD, reqs(3))
  call ex_call('MPI_Isend', 25*8, 0)
  call MPI_Isend(a, 35, MPI_DOUBLE_PRECISION, peer, 12, MPI_COMM_WORLD, reqs(4))
  call ex_call('MPI_Isend', 35*8, 0)
  call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE)
  call ex_call('MPI_Waitall', 0, 0)
  ! One more receive completed by MPI_Wait with MPI_STATUS_IGNORE: 6 integers 0 -> 1.
  if (rank == 1) then
    call MPI_Irecv(jv, 20, MPI_INTEGER, 0, 13, MPI_COMM_WORLD, r)
    call ex_call('MPI_Irecv', 0, 6*4)
  else
    call MPI_Isend(iv, 6, MPI_INTEGER, 1, 13, MPI_COMM_WORLD, r)
    call ex_call('MPI_Isend', 6*4, 0)
  end if
  call MPI_Wait(r, MPI_STATUS_IGNORE)
  call ex_call('MPI_Wait', 0, 0)

  call MPI_Sendrecv(iv, 4 + rank, MPI_INTEGER, peer, 14, jv, 20, MPI_INTEGER, peer, 14, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  call ex_call('MPI_Sendrecv', (4 + rank)*4, (4 + peer)*4)

  call MPI_Allreduce(MPI_IN_PLACE, iv, 20, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call ex_call('MPI_Allreduce', 0, 20*4)
  if (iv(20) /= 3) stop 4
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, a, 8, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
    call ex_call('MPI_Reduce', 0, 8*8)
  else
    call MPI_Reduce(a, b, 8, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
    call ex_call('MPI_Reduce', 8*8, 0)
  end if
  call MPI_Bcast(a, 9, MPI_DOUBLE_PRECISION, 1, MPI_COMM_WORLD)
  if (rank == 1) then
    call ex_call('MPI_Bcast', 9*8, 0)
  else
    call ex_call('MPI_Bcast', 0, 9*8)
  end if
  call MPI_Alltoall(iv, 3, MPI_INTEGER, jv, 3, MPI_INTEGER, MPI_COMM_WORLD)
  call ex_call('MPI_Alltoall', 2*3*4, 2*3*4)

  call MPI_Comm_split(MPI_COMM_WORLD, 0, rank, sub)
  call ex_call('MPI_Comm_split', 0, 0)
  call MPI_Barrier(sub)
  call ex_call('MPI_Barrier', 0, 0)
  call MPI_Comm_free(sub)
  call ex_call('MPI_Comm_free', 0, 0)

  call ex_call('MPI_Finalize', 0, 0)
  call ex_write(rank)
  if (rank == 0) print '(a,i0)', 'f_f08: ok ', iv(20)
  call MPI_Finalize()
end program f_f08
